#!/usr/bin/env python3
"""Per-row losses of probmetrics (dholzmueller/probmetrics @34123ba, run
unmodified) on fixed predictions f, recalibrated probabilities g and labels,
for variational's TestProbmetricsLosses: the gain l(f, y) - l(g, y) of each
loss and wrapper calib reproduces. Usage (Debian python3 with numpy and
torch; PM the probmetrics checkout):

    git -C PM archive 34123ba probmetrics | tar -x -C /tmp/pm
    PYTHONPATH=/tmp/pm python3 scripts/variational_reference.py > variational/testdata/probmetrics.json
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_stubs  # noqa: E402

# probmetrics imports these for its calibrators and classifiers, which the
# losses do not use.
reference_stubs.install(["torchmin", "catboost", "lightgbm", "xgboost", "pandas"])

import torch  # noqa: E402
from probmetrics.distributions import CategoricalDirac, CategoricalProbs  # noqa: E402
from probmetrics.metrics import (BrierLoss, LogLoss, OverConfidenceLoss, ProperLpLoss,  # noqa: E402
                                 TopClassLoss, UnderConfidenceLoss)

torch.set_default_dtype(torch.float64)


def draw(rng, n, k):
    f = rng.dirichlet(np.full(k, 0.7), n)
    # g: f moved towards another point of the simplex, row by row, and a
    # few rows left equal to f (gain 0).
    other = rng.dirichlet(np.ones(k), n)
    t = rng.uniform(0, 0.6, (n, 1))
    g = (1 - t) * f + t * other
    g[:3] = f[:3]
    f = np.clip(f, 1e-12, None)
    f /= f.sum(1, keepdims=True)
    g = np.clip(g, 1e-12, None)
    g /= g.sum(1, keepdims=True)
    y = np.array([rng.choice(k, p=row) for row in g])
    return f, g, y


def gains(metric, f, g, y, k):
    yt = CategoricalDirac(torch.as_tensor(y), n_classes=k)
    pf, pg = CategoricalProbs(torch.as_tensor(f)), CategoricalProbs(torch.as_tensor(g))
    lf = metric._compute_indiv(y_true=yt, y_pred=pf, f_x=pf)
    lg = metric._compute_indiv(y_true=yt, y_pred=pg, f_x=pf)
    return (lf - lg).tolist()


rng = np.random.RandomState(32)
out = {"commit": "34123ba", "sets": []}
for k in (2, 5):
    f, g, y = draw(rng, 60, k)
    s = {"k": k, "f": f.ravel().tolist(), "g": g.ravel().tolist(), "labels": y.tolist(), "gains": {}}
    for p in (1, 2, 3):
        s["gains"][f"lp{p}"] = gains(ProperLpLoss(p=p, binary_as_multiclass=True), f, g, y, k)
    s["gains"]["log"] = gains(LogLoss(), f, g, y, k)
    s["gains"]["brier"] = gains(BrierLoss(), f, g, y, k)
    for name, m in (("lp1", ProperLpLoss(p=1)), ("log", LogLoss()), ("brier", BrierLoss(binary_as_multiclass=False))):
        s["gains"][f"top_{name}"] = gains(TopClassLoss(m), f, g, y, k)
    if k == 2:
        for name, m in (("lp1", ProperLpLoss(p=1)), ("brier", BrierLoss(binary_as_multiclass=False))):
            s["gains"][f"binary_{name}"] = gains(m, f, g, y, k)
            s["gains"][f"over_{name}"] = gains(OverConfidenceLoss(m), f, g, y, k)
            s["gains"][f"under_{name}"] = gains(UnderConfidenceLoss(m), f, g, y, k)
    out["sets"].append(s)
json.dump(out, sys.stdout, separators=(",", ":"))
print()
