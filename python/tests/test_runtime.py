"""The Go runtime's rules (one runtime per process, none after fork, a
recovered panic) and the calls' plumbing (zero copy, Ctrl-C, the GIL),
each in a fresh interpreter so that the test process stays clean."""

import json
import os
import shutil
import threading
import time

import numpy as np
import pytest

import calib
from calib import _native
from conftest import run_python, strip_run

# SETUP gives the child Python's Ctrl-C handler back where it was started
# with SIGINT ignored (a background job of a non-interactive shell, as a
# CI script may start the tests): these tests are of calib's handling of
# a KeyboardInterrupt, which Python raises only with its handler in place.
SETUP = """
import os, sys, time, json, signal
signal.signal(signal.SIGINT, signal.default_int_handler)
import numpy as np
import calib
rng = np.random.default_rng(1)
P = rng.dirichlet(np.ones(4), size=400)
Y = rng.integers(0, 4, size=400)
def value():
    return calib.evaluate(P, Y, metrics="ece_bin,brier").to_json()
"""


def ok(p):
    assert p.returncode == 0, f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}"
    return p.stdout


def test_zero_copy_for_contiguous_float64():
    a = np.random.default_rng(0).dirichlet(np.ones(5), size=100)
    x, dtype = _native.predictions(a, "probs")
    assert x is a and dtype == 0
    assert _native.backend().input_address(x, dtype) == a.ctypes.data  # the library reads a's own buffer
    f = a.astype(np.float32)
    x, dtype = _native.predictions(f, "probs")
    assert x is f and dtype == 1  # float32 goes to Go as it is (Go converts it)
    t = np.asfortranarray(a)
    x, _ = _native.predictions(t, "probs")
    assert x is not t and x.flags.c_contiguous


def test_fork_before_first_use_works():
    out = ok(run_python(SETUP + """
pid = os.fork()
if pid == 0:
    try:
        v = value()
        ok = type(calib._native.backend()).__name__ == "_Library"
        os._exit(0 if ok and "ece_bin" in v else 3)
    except BaseException as e:
        print(e, file=sys.stderr); os._exit(4)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status), "ece_bin" in value())
"""))
    assert out.split() == ["0", "True"]


def test_fork_after_first_use_falls_back():
    out = ok(run_python(SETUP + """
parent = value()
pid = os.fork()
if pid == 0:
    t = time.monotonic()
    try:
        v = value()
        same = json.loads(v)["results"][0]["value"] == json.loads(parent)["results"][0]["value"]
        kind = type(calib._native.backend()).__name__
        print(kind, same, round(time.monotonic() - t, 3), flush=True)
        os._exit(0)
    except BaseException as e:
        print("error", e, flush=True); os._exit(4)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""))
    kind, same, seconds, code = out.split()
    assert (kind, same, code) == ("_Worker", "True", "0")
    assert float(seconds) < 5, "the out-of-process backend took too long to start"


def test_fork_after_first_use_error_within_a_second():
    out = ok(run_python(SETUP + """
value()
pid = os.fork()
if pid == 0:
    t = time.monotonic()
    try:
        value(); print("no error", flush=True)
    except calib.CalibError as e:
        print(round(time.monotonic() - t, 3), "|", e, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
""", env={"CALIB_FALLBACK": "error"}))
    seconds, msg = out.split("|", 1)
    assert float(seconds) < 1
    assert "forked" in msg and "fork()" in msg


def test_second_go_runtime_detected(tmp_path):
    other = tmp_path / "libother.so"
    shutil.copyfile(_native.library_path(), other)
    code = SETUP.replace("import calib", "import ctypes\nctypes.CDLL(%r)\nimport calib" % str(other)) + """
v = value()
print(type(calib._native.backend()).__name__, calib._native.backend().reason)
"""
    out = ok(run_python(code))
    assert out.startswith("_Worker another Go runtime") and "libother.so" in out
    p = run_python(code, env={"CALIB_FALLBACK": "error"})
    assert p.returncode != 0 and "another Go runtime" in p.stderr and "libother.so" in p.stderr


def test_worker_backend_gives_the_same_numbers():
    """The out-of-process backend (forced) runs every entry point."""
    code = SETUP + """
cal = calib.Calibrator("isotonic").fit(P, Y)
print(json.dumps([value(), cal.predict_proba(P[:3]).tolist(), type(calib._native.backend()).__name__]))
"""
    a = json.loads(ok(run_python(code, env={"CALIB_BACKEND": "subprocess"})))
    b = json.loads(ok(run_python(code, env={"CALIB_BACKEND": "inprocess"})))
    assert a[2] == "_Worker" and b[2] == "_Library"
    assert strip_run(json.loads(a[0])) == strip_run(json.loads(b[0]))
    assert a[1] == b[1]


def test_recovered_panic_poisons_later_calls():
    out = ok(run_python(SETUP + """
code, msg = calib._native.backend().debug_panic()
print(code, "internal error" in msg)
try:
    value(); print("no error")
except calib.CalibError as e:
    print("refused", "earlier call" in str(e))
"""))
    assert out.split() == ["3", "True", "refused", "True"]


@pytest.mark.parametrize("backend", ["inprocess", "subprocess"])
def test_keyboard_interrupt_reaches_calls_of_other_threads(backend):
    """Ctrl-C while calls run in other threads (Python delivers it to the
    main thread): the main thread gets KeyboardInterrupt, and each call
    raises KeyboardInterrupt in its own thread within a second."""
    out = ok(run_python(SETUP + """
import signal, threading
P = rng.dirichlet(np.ones(10), size=3000)
Y = rng.integers(0, 10, size=3000)
got = {}
def call(i):
    try:
        calib.evaluate(P, Y, metrics="ece_kde", mode="canonical", ci_exact=True, ci_resamples=100000)
        got[i] = ("finished", 0)
    except BaseException as e:
        got[i] = (type(e).__name__, time.monotonic())
value()  # the backend started
threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
for t in threads:
    t.start()
try:
    time.sleep(1.0)
    sent = time.monotonic()
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)
    print("main not interrupted")
except KeyboardInterrupt:
    print("main interrupted")
for t in threads:
    t.join(60)
for i in range(2):
    print(got[i][0], round(got[i][1] - sent, 3))
print("after", "brier" in value())
""", timeout=120, env={"CALIB_BACKEND": backend}))
    words = out.split()
    assert words[:2] == ["main", "interrupted"], out
    for i in (2, 4):
        assert words[i] == "KeyboardInterrupt" and float(words[i + 1]) < 1.0, out
    assert words[-2:] == ["after", "True"], out


def test_keyboard_interrupt_stops_the_second_pass():
    """Accumulator.second_pass (ece_variational's maps fitted on the
    samples: about a second at K = 100) stops on Ctrl-C within a second;
    the accumulator stays in its first pass and begins the second later."""
    out = ok(run_python(SETUP + """
import signal, threading
K, n = 100, 60000
Z = rng.normal(size=(n, K)) * 2.5
P = np.exp(Z - Z.max(1, keepdims=True)); P /= P.sum(1, keepdims=True)
Y = rng.integers(0, K, size=n)
a = calib.Accumulator(metrics="ece_variational")
a.add(P, Y)
sent = {}
def interrupt():
    sent["t"] = time.monotonic()
    os.kill(os.getpid(), signal.SIGINT)
threading.Timer(0.2, interrupt).start()
try:
    a.second_pass()
    print("finished 0", a.current_pass)
except KeyboardInterrupt:
    print("interrupted", round(time.monotonic() - sent["t"], 3), a.current_pass)
a.second_pass()
print("then", a.current_pass)
""", timeout=120))
    words = out.split()
    assert words[0] == "interrupted" and float(words[1]) < 1.0 and words[2] == "1", out
    assert words[3:] == ["then", "2"], out


def test_keyboard_interrupt_within_a_second():
    out = ok(run_python(SETUP + """
import signal, threading
P = rng.dirichlet(np.ones(10), size=3000)
Y = rng.integers(0, 10, size=3000)
sent = {}
def interrupt():
    sent["t"] = time.monotonic()
    os.kill(os.getpid(), signal.SIGINT)
threading.Timer(1.0, interrupt).start()
t0 = time.monotonic()
try:
    calib.evaluate(P, Y, metrics="ece_kde", mode="canonical", ci_exact=True, ci_resamples=100000)
    print("finished", time.monotonic() - t0)
except KeyboardInterrupt:
    print("interrupted", round(time.monotonic() - sent["t"], 3))
print("after", "brier" in value())
""", timeout=120))
    first, after = out.split()[:2], out.split()[2:]
    assert first[0] == "interrupted", out
    assert float(first[1]) < 1.0, f"KeyboardInterrupt came {first[1]} s after Ctrl-C"
    assert after == ["after", "True"]


def test_gil_released_during_a_call():
    """Another Python thread runs while Go computes: calls for at least
    0.3 s, a thread ticking every 5 ms beside them."""
    rng = np.random.default_rng(2)
    P = rng.dirichlet(np.ones(10), size=3000)
    Y = rng.integers(0, 10, size=3000)
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.005)

    t = threading.Thread(target=tick)
    t.start()
    start = time.monotonic()
    calls = 0
    while time.monotonic() - start < 0.3 or calls < 2:
        calib.evaluate(P, Y, metrics="ece_kde", mode="canonical")
        calls += 1
    end = time.monotonic()
    stop.set()
    t.join()
    during = [x for x in ticks if start < x < end]
    assert len(during) >= 0.3 * (end - start) / 0.005, f"{len(during)} ticks in {end - start:.3f} s ({calls} calls)"


def test_signals_during_a_call_leave_no_dangling_buffer():
    """Two Ctrl-Cs 10 ms apart, and an exception raised by another signal's
    handler, during a gradient call: the call is cancelled and waited for
    (Go never writes into a freed output buffer), the exception reaches the
    caller, and the library stays usable."""
    out = ok(run_python(SETUP + """
import signal, threading, gc
from calib import _native
rng = np.random.default_rng(3)
Z = rng.normal(size=(20000, 10))
Yz = rng.integers(0, 10, size=20000)
x, dt = _native.predictions(Z, "logits")
y, lc = _native.label_array(Yz, 20000)
def twice():
    os.kill(os.getpid(), signal.SIGINT); time.sleep(0.01); os.kill(os.getpid(), signal.SIGINT)
threading.Timer(0.5, twice).start()
got = []
def attempt():
    try:
        _native.backend().grad({"bandwidth": 0.1, "mode": "top_label", "logits": True, "exact": True}, x, dt, y, lc, None)
        got.append("finished")
    except KeyboardInterrupt:
        got.append("interrupted")
try:
    attempt()
    time.sleep(0.3)  # the second Ctrl-C lands here unless the call absorbed it
except KeyboardInterrupt:
    pass
print(got[0])
gc.collect()
def alarm(*_):
    raise TimeoutError("alarm")
signal.signal(signal.SIGALRM, alarm)
signal.setitimer(signal.ITIMER_REAL, 0.5)
try:
    _native.backend().grad({"bandwidth": 0.1, "mode": "top_label", "logits": True, "exact": True}, x, dt, y, lc, None)
    print("finished")
except TimeoutError:
    # Go has returned before the exception left the call.
    # (its thread may still be in its last microseconds: 10 ms to end)
    calls = [t for t in threading.enumerate() if t.name == "calib-call"]
    for t in calls:
        t.join(0.01)
    print("timeout", any(t.is_alive() for t in calls))
gc.collect()
time.sleep(0.5)
print("after", "brier" in value())
""", timeout=120))
    assert out.split() == ["interrupted", "timeout", "False", "after", "True"], out
