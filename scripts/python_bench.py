"""Timings of the Python package for BENCHMARKS.md.

    .venv/bin/python scripts/python_bench.py overhead
    .venv/bin/python scripts/python_bench.py side-by-side --paper PATH/ece_kde.py
    .venv/bin/python scripts/python_bench.py latency

overhead: calib.evaluate (the default metrics, and brier alone) on n = 1,000,
K = 10 against the same work in Go, which `go test -run '^$' -bench
'RunArrays' ./cmd/calib/internal/commands` measures (the eval command run
on the same arrays, as the C ABI runs it); this prints the Python side.

side-by-side: on the same arrays (CIFAR-10 DenseNet-121 validation logits in
testdata/realsets, n = 5,000, and its first 1,000 rows), calib.ece_kde
against the ECE^KDE paper's own code (github.com/tpopordanoska/ece-kde,
ece_kde.py, on this machine's PyTorch, float32 as its README runs it; not in
this repository: pass its path), the LOO bandwidth search and the canonical
and top-label estimates; and calib.ece_binned against a plain numpy 15-bin
top-label ECE. Prints the median of repeated runs and the values.

latency: the time from Ctrl-C (SIGINT sent to the process) to the
KeyboardInterrupt of a long calib.evaluate (ece_kde with --ci-exact on
n = 3,000, K = 10), and, in a child forked after the library was loaded,
the first call (which starts the out-of-process worker) and the next ones.
"""

import argparse
import importlib.util
import os
import statistics
import sys
import time

import numpy as np

import calib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(fn, reps):
    ts, out = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), out


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def overhead_set():
    # The set BenchmarkRunArrays uses: the first 1,000 rows of the CIFAR-10
    # DenseNet-121 (focal loss) validation logits, as probabilities.
    d = os.path.join(ROOT, "testdata", "realsets", "cifar10_densenet121-flsd53")
    z = np.load(os.path.join(d, "logits.npy"))[:1000].astype(np.float64)
    y = np.load(os.path.join(d, "labels.npy"))[:1000]
    return z, y


def overhead(reps):
    z, y = overhead_set()
    calib.evaluate(z, y, logits=True)  # load the library
    for name, kw in (("default metrics", {}), ("brier alone", {"metrics": "brier"})):
        t, _ = timed(lambda: calib.evaluate(z, y, logits=True, **kw), reps)
        print(f"python calib.evaluate n=1000 K=10 logits {name}: {t * 1e3:.3f} ms (median of {reps})")


def numpy_ece(p, y, bins=15):
    """The usual 15-bin top-label ECE in plain numpy: equal-width bins
    (lo, hi] of the confidence, sum_b (n_b / n) |acc_b - conf_b|."""
    conf = p.max(axis=1)
    acc = (p.argmax(axis=1) == y).astype(np.float64)
    idx = np.clip(np.ceil(conf * bins).astype(int) - 1, 0, bins - 1)
    n = np.bincount(idx, minlength=bins)
    sa = np.bincount(idx, weights=acc, minlength=bins)
    sc = np.bincount(idx, weights=conf, minlength=bins)
    return float(np.sum(np.abs(sa - sc)) / len(y))


def side_by_side(paper_path, reps):
    import torch

    spec = importlib.util.spec_from_file_location("paper_ece_kde", paper_path)
    paper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(paper)
    torch.set_num_threads(os.cpu_count())
    d = os.path.join(ROOT, "testdata", "realsets", "cifar10_densenet121-flsd53")
    z_all = np.load(os.path.join(d, "logits.npy")).astype(np.float64)
    y_all = np.load(os.path.join(d, "labels.npy"))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; numpy {np.__version__}; calib {calib.version()}")
    for n in (1000, 5000):
        p, y = softmax(z_all[:n]), y_all[:n]
        f32, yt = torch.tensor(p, dtype=torch.float32), torch.tensor(y)
        calib.evaluate(p, y, metrics="brier")  # load the library
        t_bw_paper, h_paper = timed(lambda: float(paper.get_bandwidth(f32, "cpu")), max(1, reps // 3))
        t_bw_calib, bw = timed(lambda: calib.bandwidth(p, y)["bandwidth"], reps)
        print(f"n={n} K=10 LOO bandwidth: paper {t_bw_paper:.3f} s (h = {h_paper:.6g}, grid of 20), calib {t_bw_calib:.3f} s (h = {bw:.6g}, grid + Brent)")
        for mode, paper_mode in (("canonical", "canonical"), ("top_label", "top_label")):
            t_paper, v_paper = timed(lambda: float(paper.get_ece_kde(f32, yt, h_paper, 1, paper_mode, "cpu")), reps)
            t_calib, v_calib = timed(lambda: calib.ece_kde(p, y, mode=mode, bandwidth=h_paper), reps)
            print(f"n={n} K=10 ECE^KDE {mode} p=1 at h={h_paper:.6g}: paper {t_paper * 1e3:.1f} ms ({v_paper:.7g}, float32), calib {t_calib * 1e3:.1f} ms ({v_calib:.7g}, float64)")
        t_np, v_np = timed(lambda: numpy_ece(p, y), reps)
        t_cb, v_cb = timed(lambda: calib.ece_binned(p, y), reps)
        print(f"n={n} K=10 15-bin top-label ECE: numpy {t_np * 1e3:.2f} ms ({v_np:.12g}), calib {t_cb * 1e3:.2f} ms ({v_cb:.12g})")


def latency(reps):
    import json
    import signal
    import threading

    rng = np.random.default_rng(1)
    P = rng.dirichlet(np.ones(10), size=3000)
    Y = rng.integers(0, 10, size=3000)
    lat = []
    for _ in range(reps):
        sent = {}

        def interrupt():
            sent["t"] = time.monotonic()
            os.kill(os.getpid(), signal.SIGINT)

        threading.Timer(0.5, interrupt).start()
        try:
            calib.evaluate(P, Y, metrics="ece_kde", mode="canonical", ci_exact=True, ci_resamples=100000)
        except KeyboardInterrupt:
            lat.append(time.monotonic() - sent["t"])
    print("Ctrl-C to KeyboardInterrupt (ece_kde --ci-exact, n=3000, K=10):", [round(x * 1e3, 1) for x in lat], "ms")
    small, ys = rng.dirichlet(np.ones(4), size=400), rng.integers(0, 4, size=400)
    calib.evaluate(small, ys, metrics="brier")  # the library is loaded: a child must not use it
    firsts, nexts = [], []
    for _ in range(3):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            t = time.monotonic()
            calib.evaluate(small, ys, metrics="brier")
            t1 = time.monotonic() - t
            t = time.monotonic()
            calib.evaluate(small, ys, metrics="brier")
            os.write(w, json.dumps([t1, time.monotonic() - t]).encode())
            os._exit(0)
        os.waitpid(pid, 0)
        a, b = json.loads(os.read(r, 1000))
        firsts.append(a)
        nexts.append(b)
    print("forked child, out-of-process backend: first call", [round(a * 1e3) for a in firsts], "ms; next call", [round(b * 1e3, 1) for b in nexts], "ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["overhead", "side-by-side", "latency"])
    ap.add_argument("--paper", help="path of the paper's ece_kde.py")
    ap.add_argument("--reps", type=int, default=20)
    a = ap.parse_args()
    if a.what == "overhead":
        overhead(a.reps)
    elif a.what == "latency":
        latency(min(a.reps, 5))
    else:
        if not a.paper:
            sys.exit("side-by-side needs --paper PATH/ece_kde.py")
        side_by_side(a.paper, a.reps)


if __name__ == "__main__":
    main()
