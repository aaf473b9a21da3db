"""Fit a recalibration map on a validation split, check it on the test
split, and ship it as the JSON that `calib apply` reads.

    .venv/bin/python python/examples/fit_and_ship_map.py [OUT.json]

Data: CIFAR-10 ResNet-110 (Brier loss) validation logits in testdata, split
in two halves."""

import os
import sys

import numpy as np

import calib

here = os.path.dirname(os.path.abspath(__file__))
d = os.path.join(here, "..", "..", "testdata", "realsets", "cifar10_resnet110-brier")
z, y = np.load(os.path.join(d, "logits.npy")), np.load(os.path.join(d, "labels.npy"))
val, test = slice(0, 2500), slice(2500, None)

before = calib.ece_binned(z[test], y[test], logits=True)
best = None
for method in ["temperature", "vector", "dirichlet-odir", "log-spline", "isotonic"]:
    cal = calib.Calibrator(method, logits=True).fit(z[val], y[val])
    p = cal.predict_proba(z[test])
    ece = calib.ece_binned(p, y[test])
    nll = calib.evaluate(p, y[test], metrics="nll").nll.value
    print(f"{method:15s} top-label ECE {before:.4f} -> {ece:.4f}   NLL {nll:.4f}")
    if best is None or nll < best[0]:
        best = (nll, cal)

out = sys.argv[1] if len(sys.argv) > 1 else "calib-map.json"
best[1].save(out)
print(f"best by NLL: {best[1].method_}, written to {out}; apply it with")
print(f"  calib apply {out} PRED.npy --logits -o calibrated.npy")
# And back: the map loads here and gives the same probabilities.
again = calib.Calibrator.load(out)
assert np.array_equal(again.predict_proba(z[test]), best[1].predict_proba(z[test]))
