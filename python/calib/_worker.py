"""The out-of-process backend's server: loads calib's Go library in a fresh
interpreter and answers the calls of calib._native._Worker, one
length-prefixed pickle (method, args) in, one pickle (result or exception)
out, until its stdin closes. Not for direct use."""

import pickle
import signal
import struct
import sys

from calib import _native


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent kills it instead
    lib = _native._Library(_native.library_path())
    rd, wr = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = rd.read(8)
        if len(head) != 8:
            return
        body = rd.read(struct.unpack("<Q", head)[0])
        try:
            method, args = pickle.loads(body)
            reply = getattr(lib, method)(*args)
        except BaseException as e:  # returned to the caller, raised there
            reply = e
        out = pickle.dumps(reply, protocol=pickle.HIGHEST_PROTOCOL)
        wr.write(struct.pack("<Q", len(out)) + out)
        wr.flush()


if __name__ == "__main__":
    main()
