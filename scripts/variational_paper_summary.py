#!/usr/bin/env python3
"""Summarise the published multiclass results of the variational paper
(Berta et al. 2026; ElSacho/Evaluating_Lp_Calibration_Errors @a2c19fe,
results/synthetic_multiclass_V7.csv) for calib's estimators experiment.

For each distortion h_func, K in {3, 10} and n in {1069, 5719, 10000}: the
true canonical L1 error the paper prints (ERT_L1_ECE_TRUE, computed by the
paper's code by Monte Carlo over 100,000 draws for each seed: their mean) and the mean and standard
deviation over the experiment indices (seeds 0 to 9) of four of its
estimators: temperature scaling (TSPredictor), isotonic regression
(IsotonicPredictor), CatBoost (BetterCatBoost) and k-means binning
(Binning_Classic). Usage:

    git -C REPO show a2c19fe:results/synthetic_multiclass_V7.csv | \\
        python3 scripts/variational_paper_summary.py > experiment/published/variational_paper.csv
"""
import csv
import statistics
import sys
from collections import defaultdict

ESTIMATORS = ["TSPredictor", "IsotonicPredictor", "BetterCatBoost", "Binning_Classic"]
NS = [1069, 5719, 10000]

rows = list(csv.DictReader(sys.stdin))
groups = defaultdict(list)
for r in rows:
    n = int(float(r["n_samples"]))
    if n in NS:
        groups[(r["h_func"], int(float(r["n_classes"])), n)].append(r)

out = csv.writer(sys.stdout, lineterminator="\n")
out.writerow(["h_func", "k", "n", "runs", "true_l1"] + [f"{e}_{s}" for e in ESTIMATORS for s in ("mean", "sd")])
for (h, k, n), rs in sorted(groups.items()):
    # Each seed's own Monte Carlo truth (100,000 draws): their mean.
    truth = statistics.mean(float(r["ERT_L1_ECE_TRUE"]) for r in rs)
    line = [h, k, n, len(rs), f"{truth:.6f}"]
    for e in ESTIMATORS:
        vals = [float(r[f"ERT_L1_ECE_{e}"]) for r in rs if r.get(f"ERT_L1_ECE_{e}") not in ("", None)]
        line += [f"{statistics.mean(vals):.6f}", f"{statistics.stdev(vals):.6f}" if len(vals) > 1 else "nan"]
    out.writerow(line)
