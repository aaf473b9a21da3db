#!/usr/bin/env python3
"""Times the ECE^KDE authors' reference code (ece_kde.py, github.com/tpopordanoska/ece-kde,
not part of this repository) on the cases of the side-by-side table, in process,
float32 as the reference holds its tensors, best of REPEATS, and prints one line per case:

    case seconds value

Usage: reference-side-by-side.py DIR_WITH_ece_kde.py DATA_DIR THREADS REPEATS

DATA_DIR holds the cases' probabilities and labels as written by reference-side-by-side.sh
(CASE_probs.npy, CASE_labels.npy, CASE.mode)."""
import sys, time, importlib, os
import numpy as np
import torch

sys.path.insert(0, sys.argv[1])
ece_kde = importlib.import_module("ece_kde")
data, threads, repeats = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
for name in sorted(f[:-5] for f in os.listdir(data) if f.endswith(".mode")):
    mode = open(os.path.join(data, name + ".mode")).read().strip()
    f = torch.from_numpy(np.load(os.path.join(data, name + "_probs.npy")).astype(np.float32))
    y = torch.from_numpy(np.load(os.path.join(data, name + "_labels.npy")).astype(np.int64))
    best, value = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        value = float(ece_kde.get_ece_kde(f, y, 0.05, 1, mode, "cpu"))
        best = min(best, time.perf_counter() - t0)
    print(f"{name} {best:.3f} {value:.6f}", flush=True)
