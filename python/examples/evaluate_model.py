"""Evaluate a model's calibration from Python: the numbers to report, an
interval, a test, and the same JSON the command line prints.

    .venv/bin/python python/examples/evaluate_model.py

Data: CIFAR-10 DenseNet-121 (focal loss) validation logits in testdata."""

import os

import numpy as np

import calib

here = os.path.dirname(os.path.abspath(__file__))
d = os.path.join(here, "..", "..", "testdata", "realsets", "cifar10_densenet121-flsd53")
logits, labels = np.load(os.path.join(d, "logits.npy")), np.load(os.path.join(d, "labels.npy"))

# The default metrics, as `calib eval FILE --logits` prints them.
ev = calib.evaluate(logits, labels, logits=True)
print(ev)

# The number to report at any K (with its 95 % interval), and the top-label
# numbers other papers print.
v = calib.ece_variational(logits, labels, logits=True)
lo, hi = v.interval
print(f"canonical CE_1 (variational): {v.value:.4f} [{lo:.4f}, {hi:.4f}] (map family {v.family})")
print(f"15-bin top-label ECE: {calib.ece_binned(logits, labels, logits=True):.4f}")
print(f"top-label KS error:   {calib.ks_error(logits, labels, logits=True):.4f}")
print(f"as scikit-learn's convention would bin it: {calib.ece_binned(logits, labels, logits=True, convention='sklearn'):.4f}")

# Is it calibrated? p-values that hold their level.
t = calib.test(logits, labels, logits=True)
print(t["answer"])

# Every entry as a table (pandas, where installed).
try:
    print(ev.to_pandas()[["metric", "notion", "p", "value"]])
except ImportError:
    pass
