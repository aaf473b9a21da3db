"""The bridge to the Go library (libcalib, calib's C ABI; see
cmd/calib/libcalib): loading it, the arrays it takes, cancellable calls in a
worker thread, and the out-of-process backend used where the library cannot
live in this process.

Go's runtime rules, and how they are kept:

* The library is loaded lazily, on the first call, and the process id is
  recorded. A child made by fork() after that (multiprocessing's default
  start method on Linux) cannot use it: the Go runtime's threads do not
  survive fork (golang/go#15538), and a call would hang. Such a child, and a
  process holding another Go runtime (only one can live in a process,
  golang/go#18976: two Go-built extensions crash), use the out-of-process
  backend: a fresh interpreter (``python -m calib._worker``) that loads the
  library and answers the same calls over a pipe. CALIB_BACKEND=inprocess
  or =subprocess forces one; with CALIB_FALLBACK=error the conflict raises
  RuntimeError at once instead.
* A Go panic is recovered at the library's boundary; every later call then
  fails with a clear RuntimeError (the library's state is not trusted).
* Every call runs in a worker thread with the GIL released (ctypes releases
  it during a foreign call); Ctrl-C cancels the call, which returns within
  a second, and raises KeyboardInterrupt, from any thread: Python delivers
  SIGINT to the main thread, where calib's handler (see _on_sigint)
  cancels the calls of every thread.
"""

import ctypes
import json
import re
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
LIBRARY_NAME = "libcalib.so"

# Return codes of the C ABI.
OK, FAILURE, INPUT, PANIC, POISONED, CANCELLED = 0, 1, 2, 3, 4, 130


class CalibError(RuntimeError):
    """A failure inside calib that is not the input's fault."""


def library_path():
    """The path of libcalib: $CALIB_LIBRARY, else the one installed with the
    package."""
    return os.environ.get("CALIB_LIBRARY") or os.path.join(_HERE, "_lib", LIBRARY_NAME)


# ---------------------------------------------------------------- arrays


def predictions(x, name):
    """x as a C-contiguous 2-D float64 or float32 array (float64 input that is
    already contiguous is returned as is: the library reads the caller's
    buffer), with the ABI's dtype code. One-dimensional input is one column
    (the binary case: p1, or its logit)."""
    x = _from_tensor(x)
    try:
        a = np.asarray(x)
    except ValueError as e:  # ragged nested lists
        raise ValueError(f"{name}: not an array of shape (n, K): {e}") from None
    if a.dtype == object or a.dtype.kind not in "fiub":
        raise ValueError(f"{name}: dtype {a.dtype}: want real numbers (float64 or float32; integers and booleans are converted)")
    if a.ndim == 1:
        a = a.reshape(-1, 1)
    if a.ndim != 2:
        raise ValueError(f"{name}: shape {a.shape}: want (n, K) predictions, or (n,) for one column")
    if a.shape[1] == 0:
        raise ValueError(f"{name}: shape {a.shape}: no columns")
    if a.dtype == np.float32:
        return np.ascontiguousarray(a), 1
    return np.ascontiguousarray(a, dtype=np.float64), 0


def _from_tensor(x):
    """A PyTorch (or similar) tensor as a numpy array on the CPU: detached,
    and half-precision types (bfloat16, float16, which numpy lacks or
    torch cannot export) widened to float32."""
    if hasattr(x, "detach") and hasattr(x, "cpu") and hasattr(x, "numpy"):
        x = x.detach().cpu()
        if str(getattr(x, "dtype", "")) in ("torch.bfloat16", "torch.float16"):
            x = x.float()
        return x.numpy()
    return x


def label_array(y, n, name="labels"):
    """y as a contiguous int32, int64 or float64 vector of n labels and its
    ABI code (0 and None for no labels)."""
    if y is None:
        return None, 0
    y = _from_tensor(y)
    a = np.asarray(y)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a.reshape(-1)
    if a.ndim != 1:
        raise ValueError(f"{name}: shape {a.shape}: want one label per row, shape ({n},)")
    if a.shape[0] != n:
        raise ValueError(f"{name}: {a.shape[0]} labels for {n} prediction rows")
    kind = a.dtype.kind
    if kind == "b" or (kind in "iu" and a.dtype.itemsize < 4):
        a = a.astype(np.int32)
    elif kind == "u":
        # Compared as Python ints: numpy compares uint64 with int64 in
        # float64, where 2^63 equals the int64 maximum.
        if a.size and int(a.max()) > 2**31 - 1:
            i = int(np.argmax(a))
            raise ValueError(f"{name}: row {i + 1}: bad label: {int(a[i])} is outside the range of labels")
        a = a.astype(np.int64)
    elif kind == "f":
        a = a.astype(np.float64, copy=False)
    elif kind != "i":
        raise ValueError(f"{name}: dtype {a.dtype}: want integer labels")
    a = np.ascontiguousarray(a)
    code = {np.dtype(np.int32): 1, np.dtype(np.int64): 2, np.dtype(np.float64): 3}[a.dtype]
    return a, code


def weight_array(w, n, name="weights"):
    """w as a contiguous float64 vector of n sample weights (None: all 1)."""
    if w is None:
        return None
    w = _from_tensor(w)
    a = np.asarray(w)
    if a.dtype == object or a.dtype.kind not in "fiub":
        raise ValueError(f"{name}: dtype {a.dtype}: want real numbers")
    if a.ndim == 2 and a.shape[1] == 1:
        a = a.reshape(-1)
    a = np.ascontiguousarray(a, dtype=np.float64).reshape(-1) if a.ndim <= 1 else a
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f"{name}: shape {np.shape(w)}: want one weight per row, shape ({n},)")
    return a


def arrays(probs, labels, weights, name):
    """The predictions, labels and weights of a call, as the ABI takes
    them: (x, dtype code, labels or None, labels code, weights or None)."""
    x, dtype = predictions(probs, name)
    y, lcode = label_array(labels, x.shape[0])
    return x, dtype, y, lcode, weight_array(weights, x.shape[0])


def _ptr(a):
    return None if a is None else ctypes.c_void_p(a.ctypes.data)


# ---------------------------------------------------------------- in process


def _cancel_and_wait(lib, h, done):
    """Cancel call h and wait until it has returned (done is set), whatever
    is raised meanwhile (signal handlers)."""
    while True:
        try:
            lib.calib_cancel(h)
            break
        except BaseException:
            continue
    while not done.is_set():
        try:
            done.wait(0.05)
        except BaseException:
            continue


# Ctrl-C and calls made from threads other than the main one. Python
# delivers SIGINT to the main thread only, so a call made from another
# thread would not see it. While calib is imported, Python's SIGINT handler
# is _on_sigint (installed at import where the handler was Python's default
# and the import runs in the main thread): it cancels every call in flight,
# from any thread; each raises KeyboardInterrupt in its own thread once Go
# has returned (within a second), and the main thread gets its
# KeyboardInterrupt as with Python's handler. Where another handler was in
# place (or calib was first imported in another thread), calls from other
# threads run to their end.
_inflight = {}  # token -> (cancel, marks, main): cancel() stops the call, marks records the signal


def _on_sigint(signum, frame):
    main_call = False
    for cancel, marks, main in list(_inflight.values()):  # a copy: dict ops are atomic under the GIL
        marks.append(signum)
        cancel()
        main_call = main_call or main
    if not main_call:  # no call of the main thread: Python's own behaviour
        signal.default_int_handler(signum, frame)


def _install_sigint():
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)


class _Library:
    """libcalib loaded in this process."""

    generation = 0  # the worker's restarts, for handles (see _Worker)

    def __init__(self, path):
        if not os.path.exists(path):
            raise CalibError(f"calib: the Go library is not installed at {path}; reinstall the package (pip install ./python builds it with Go) or set CALIB_LIBRARY")
        lib = ctypes.CDLL(path)
        i64, c_int, vp, cp = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)
        dp = ctypes.POINTER(ctypes.c_double)
        lib.calib_call_new.restype = i64
        lib.calib_call_new.argtypes = []
        lib.calib_cancel.argtypes = [i64]
        lib.calib_call_free.argtypes = [i64]
        lib.calib_free.argtypes = [vp]
        lib.calib_version.restype = vp
        lib.calib_registry.restype = vp
        lib.calib_input_address.restype = ctypes.c_size_t
        lib.calib_input_address.argtypes = [vp, c_int, i64, i64]
        lib.calib_run.restype = c_int
        lib.calib_run.argtypes = [i64, ctypes.c_char_p, vp, c_int, i64, i64, vp, c_int, vp, ctypes.POINTER(vp)]
        lib.calib_apply.restype = c_int
        lib.calib_apply.argtypes = [i64, ctypes.c_char_p, vp, c_int, i64, i64, vp, i64, ctypes.POINTER(vp)]
        lib.calib_ece_kde_grad.restype = c_int
        lib.calib_ece_kde_grad.argtypes = [i64, ctypes.c_char_p, vp, c_int, i64, i64, vp, c_int, vp, vp, dp, ctypes.POINTER(vp)]
        lib.calib_stream_new.restype = c_int
        lib.calib_stream_new.argtypes = [ctypes.c_char_p, ctypes.POINTER(vp)]
        lib.calib_stream_add.restype = c_int
        lib.calib_stream_add.argtypes = [i64, i64, vp, c_int, i64, i64, vp, c_int, vp, ctypes.POINTER(vp)]
        lib.calib_stream_merge.restype = c_int
        lib.calib_stream_merge.argtypes = [i64, i64, ctypes.POINTER(vp)]
        lib.calib_stream_state.restype = c_int
        lib.calib_stream_state.argtypes = [i64, ctypes.POINTER(vp)]
        lib.calib_stream_pass.restype = c_int
        lib.calib_stream_pass.argtypes = [i64, i64, ctypes.POINTER(vp)]
        lib.calib_stream_kernel_state.restype = c_int
        lib.calib_stream_kernel_state.argtypes = [i64, ctypes.POINTER(vp)]
        lib.calib_stream_finish.restype = c_int
        lib.calib_stream_finish.argtypes = [i64, ctypes.POINTER(vp)]
        lib.calib_stream_free.argtypes = [i64]
        lib.calib_debug_panic.restype = c_int
        lib.calib_debug_panic.argtypes = [ctypes.POINTER(vp)]
        del cp
        self.lib = lib
        self.path = path

    def _string(self, p):
        if not p:
            return ""
        try:
            return ctypes.string_at(p).decode("utf-8", "replace")
        finally:
            self.lib.calib_free(p)

    def _call(self, fn, *args):
        """Run fn(handle, *args, &out) in a worker thread, the GIL released
        while Go computes; Ctrl-C cancels it. Returns (code, message).

        In the main thread the SIGINT handler is Python's default one; for
        the call's duration it is replaced by one that cancels the call
        without raising, and KeyboardInterrupt is raised once Go has
        returned (within a second): no exception can leave this function
        while Go still reads the caller's arrays or writes the output
        buffers. An exception raised by another signal's handler cancels
        the call and waits for it the same way before it propagates."""
        lib = self.lib
        h = lib.calib_call_new()
        out = ctypes.c_void_p()
        box = {}
        interrupted = []

        done = threading.Event()  # set when Go has returned (not
        # Thread.is_alive: an exception raised into Thread.join can leave
        # it reporting a running thread as ended)

        def work():
            try:
                box["code"] = fn(h, *args, ctypes.byref(out))
            except BaseException as e:  # pragma: no cover - ctypes errors
                box["error"] = e
            finally:
                done.set()

        def on_sigint(signum, frame):
            interrupted.append(signum)
            lib.calib_cancel(h)

        main = threading.current_thread() is threading.main_thread()
        swap = main and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        if swap:
            signal.signal(signal.SIGINT, on_sigint)
        token = object()
        _inflight[token] = (lambda: lib.calib_cancel(h), interrupted, main)
        t = threading.Thread(target=work, name="calib-call", daemon=True)
        started = False
        try:
            try:
                t.start()
                started = True
                while not done.wait(0.05):
                    pass
            except BaseException:
                if started or t.ident is not None:
                    _cancel_and_wait(lib, h, done)
                raise
        finally:
            _inflight.pop(token, None)
            if swap:
                signal.signal(signal.SIGINT, signal.default_int_handler)
            if done.is_set() or t.ident is None:
                lib.calib_call_free(h)
        msg = self._string(out.value)
        if "error" in box:
            raise box["error"]
        if interrupted:
            raise KeyboardInterrupt("calib: call cancelled by Ctrl-C")
        return box["code"], msg

    def version(self):
        return self._string(self.lib.calib_version())

    def registry(self):
        return json.loads(self._string(self.lib.calib_registry()))

    def input_address(self, x, dtype):
        return self.lib.calib_input_address(_ptr(x), dtype, x.shape[0], x.shape[1])

    def run(self, command, name, options, x, dtype, labels, lcode, weights):
        req = json.dumps({"command": command, "name": name, "options": options}).encode()
        return self._call(self.lib.calib_run, req, _ptr(x), dtype, x.shape[0], x.shape[1], _ptr(labels), lcode, _ptr(weights))

    def apply(self, map_json, name, logits, x, dtype, k):
        dst = np.empty((x.shape[0], k), dtype=np.float64)
        # The map's own JSON text goes in as it is (the library reads and
        # checks it): no parse and re-encoding per call.
        req = ('{"map":' + map_json + ',"name":' + json.dumps(name) + ',"logits":' + json.dumps(bool(logits)) + "}").encode()
        code, msg = self._call(self.lib.calib_apply, req, _ptr(x), dtype, x.shape[0], x.shape[1], _ptr(dst), dst.size)
        return code, msg, dst

    def grad(self, options, x, dtype, labels, lcode, weights):
        g = np.empty(x.shape, dtype=np.float64)
        v = ctypes.c_double()
        req = json.dumps(options).encode()
        code, msg = self._call(self.lib.calib_ece_kde_grad, req, _ptr(x), dtype, x.shape[0], x.shape[1], _ptr(labels), lcode, _ptr(weights), _ptr(g), ctypes.byref(v))
        return code, msg, v.value, g

    def _plain(self, fn, *args):
        """fn(*args, &out) in this thread (a short call): (code, message)."""
        out = ctypes.c_void_p()
        code = fn(*args, ctypes.byref(out))
        return code, self._string(out.value)

    def stream_new(self, name, options, state, source=None, kernel_state=None):
        req = json.dumps({"name": name, "options": options, "state": json.loads(state) if state else None,
                          "source": source or "", "kernel_state": json.loads(kernel_state) if kernel_state else None}).encode()
        return self._plain(self.lib.calib_stream_new, req)

    def stream_pass(self, h):
        return self._call(self.lib.calib_stream_pass, h)

    def stream_kernel_state(self, h):
        return self._plain(self.lib.calib_stream_kernel_state, h)

    def stream_add(self, h, x, dtype, labels, lcode, weights):
        return self._call(self.lib.calib_stream_add, h, _ptr(x), dtype, x.shape[0], x.shape[1], _ptr(labels), lcode, _ptr(weights))

    def stream_merge(self, h, other):
        return self._plain(self.lib.calib_stream_merge, h, other)

    def stream_state(self, h):
        return self._plain(self.lib.calib_stream_state, h)

    def stream_finish(self, h):
        return self._plain(self.lib.calib_stream_finish, h)

    def stream_free(self, h):
        self.lib.calib_stream_free(h)

    def debug_panic(self):
        out = ctypes.c_void_p()
        code = self.lib.calib_debug_panic(ctypes.byref(out))
        return code, self._string(out.value)


# ---------------------------------------------------------------- out of process


class _Worker:
    """The same calls, answered by a fresh interpreter that loads the library
    (python -m calib._worker) over a pipe: length-prefixed pickles."""

    def __init__(self, reason):
        self.reason = reason
        self.proc = None
        self.lock = threading.Lock()
        # generation counts the worker's starts: a handle (an Accumulator)
        # of an earlier worker names nothing in a restarted one.
        self.generation = 0

    def _start(self):
        self.generation += 1
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(_HERE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env["CALIB_BACKEND"] = "inprocess"
        env["CALIB_LIBRARY"] = library_path()
        self.proc = subprocess.Popen([sys.executable, "-m", "calib._worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)

    def _kill(self):
        p = self.proc
        if p is not None:
            p.kill()

    def _request(self, method, *args):
        marks = []
        token = object()
        if threading.current_thread() is not threading.main_thread():
            # Ctrl-C (delivered to the main thread) kills the worker, as
            # below; a request still waiting for the lock is not sent.
            _inflight[token] = (self._kill, marks, False)
        try:
            return self._send(marks, method, *args)
        finally:
            _inflight.pop(token, None)

    def _send(self, marks, method, *args):
        with self.lock:
            if marks:
                raise KeyboardInterrupt("calib: call cancelled by Ctrl-C")
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            p = self.proc
            try:
                body = pickle.dumps((method, args), protocol=pickle.HIGHEST_PROTOCOL)
                p.stdin.write(struct.pack("<Q", len(body)) + body)
                p.stdin.flush()
                head = _read(p.stdout, 8)
                reply = pickle.loads(_read(p.stdout, struct.unpack("<Q", head)[0]))
            except KeyboardInterrupt:
                p.kill()
                p.wait()
                self.proc = None
                raise
            except (OSError, EOFError) as e:
                p.kill()
                p.wait()
                self.proc = None
                if marks:
                    raise KeyboardInterrupt("calib: call cancelled by Ctrl-C") from None
                raise CalibError(f"calib: the out-of-process backend ({self.reason}) stopped: {e}") from None
        if isinstance(reply, BaseException):
            raise reply
        return reply

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def __getattr__(self, method):
        if method.startswith("_"):
            raise AttributeError(method)
        return lambda *args: self._request(method, *args)


def _read(f, n):
    b = f.read(n)
    if len(b) != n:
        raise EOFError("the worker closed its pipe")
    return b


# ---------------------------------------------------------------- the backend

_state = {"backend": None, "pid": None, "lock": threading.Lock()}


def _after_fork_in_child():
    # A lock another thread held at fork() stays held in the child: start
    # with fresh ones (the worker's too; its pipe is the parent's, so the
    # child starts its own worker).
    _state["lock"] = threading.Lock()
    b = _state["backend"]
    if isinstance(b, _Worker):
        b.lock = threading.Lock()
        b.proc = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _mapped_paths():
    """The files mapped into this process (real paths; empty where
    /proc/self/maps cannot be read)."""
    try:
        with open("/proc/self/maps") as f:
            parts = [line.split(None, 5) for line in f]
    except OSError:
        return set()
    return {os.path.realpath(p[5].strip()) for p in parts if len(p) == 6 and p[5].startswith("/")}


def _mapped(path):
    return os.path.realpath(path) in _mapped_paths()


def other_go_runtimes(own):
    """Shared objects mapped into this process, other than own, that hold a
    Go runtime (an ELF section .go.buildinfo)."""
    found = []
    own = os.path.realpath(own) if own else None
    for rp in sorted(_mapped_paths()):
        if ".so" not in os.path.basename(rp) or rp == own or not os.path.exists(rp):
            continue
        if _has_go_buildinfo(rp):
            found.append(rp)
    return found


def _has_go_buildinfo(path):
    """Whether the ELF file at path has a .go.buildinfo section."""
    try:
        with open(path, "rb") as f:
            h = f.read(64)
            if len(h) < 64 or h[:4] != b"\x7fELF" or h[4] != 2:  # 64-bit ELF only
                return False
            end = "<" if h[5] == 1 else ">"
            shoff, = struct.unpack(end + "Q", h[40:48])
            shentsize, shnum, shstrndx = struct.unpack(end + "HHH", h[58:64])
            if shoff == 0 or shnum == 0 or shstrndx >= shnum:
                return False
            f.seek(shoff)
            table = f.read(shentsize * shnum)
            def section(i):
                s = table[i * shentsize:(i + 1) * shentsize]
                name, = struct.unpack(end + "I", s[0:4])
                off, size = struct.unpack(end + "QQ", s[24:40])
                return name, off, size
            _, stroff, strsize = section(shstrndx)
            f.seek(stroff)
            names = f.read(min(strsize, 1 << 20))
            for i in range(shnum):
                name, _, _ = section(i)
                if names[name:name + 14] == b".go.buildinfo\x00":
                    return True
    except (OSError, struct.error):
        return False
    return False


def backend():
    """The backend of this process: the library in process, or the
    out-of-process worker where the runtime rules forbid it."""
    st = _state
    pid = os.getpid()
    with st["lock"]:
        if st["backend"] is not None and st["pid"] == pid:
            return st["backend"]
        forced = os.environ.get("CALIB_BACKEND", "")
        reason = None
        if st["backend"] is not None and isinstance(st["backend"], _Library):
            reason = f"this process (pid {pid}) was forked from pid {st['pid']}, which had loaded calib's Go library; a Go runtime does not survive fork()"
            if forced == "inprocess":  # a call would hang: say so instead
                raise CalibError("calib: " + reason + " (CALIB_BACKEND=inprocess: no out-of-process backend)")
        elif _mapped(library_path()):
            # Mapped, but not loaded by this process: an ancestor loaded it
            # before a fork() (a grandchild of the process that loaded it).
            reason = f"this process (pid {pid}) was forked from a process that had loaded calib's Go library ({library_path()} is mapped here); a Go runtime does not survive fork()"
            if forced == "inprocess":
                raise CalibError("calib: " + reason + " (CALIB_BACKEND=inprocess: no out-of-process backend)")
        elif forced != "inprocess":
            others = other_go_runtimes(library_path())
            if others:
                reason = "another Go runtime is loaded in this process (" + ", ".join(others) + "); only one can live in a process"
        if forced == "subprocess" and reason is None:
            reason = "CALIB_BACKEND=subprocess"
        if reason is not None and forced != "inprocess":
            if os.environ.get("CALIB_FALLBACK") == "error":
                raise CalibError("calib: " + reason + " (CALIB_FALLBACK=error: no out-of-process backend)")
            b = _Worker(reason)
        else:
            b = _Library(library_path())
        st["backend"], st["pid"] = b, pid
        return b


def same_process(b):
    """Whether the backend b belongs to this process (not to the parent of
    a forked child, where calling it would hang)."""
    return _state["backend"] is b and _state["pid"] == os.getpid()


_BAD_VALUE = re.compile(r'invalid argument ("[^"]*") for "--([a-z0-9-]+)" flag')
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def keywords(msg, spelled=None):
    """msg with the command line's flags (--ks-r) spelled as this package's
    keywords (ks_r; spelled maps those spelled otherwise), and "unknown
    flag" as "unknown option"."""
    msg = msg.replace("unknown flag: --", "unknown option: --").replace("leave the flag out", "leave it out")
    msg = msg.replace("use --logits)", "use logits=True)")  # a boolean flag given is the keyword set to True
    msg = _BAD_VALUE.sub(r"--\2=\1", msg)  # pflag's: invalid argument "x" for "--bins" flag
    spelled = spelled or {}

    def keyword(m):
        k = m.group(1).replace("-", "_")
        return spelled.get(k, k)
    return _FLAG.sub(keyword, msg)


def check(code, msg, spelled=None):
    """Raise the error that the ABI's code means (bad input: ValueError,
    its options named as keywords: keywords)."""
    if code == OK:
        return
    if code == INPUT:
        raise ValueError(keywords(msg, spelled))
    if code == CANCELLED:
        raise KeyboardInterrupt(msg)
    raise CalibError(msg)


_install_sigint()
