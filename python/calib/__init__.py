"""calib: measure and fix the calibration of probabilistic classifiers.

The Python face of calib's Go library (github.com/calib-dev/calib), loaded
in process through its C ABI: every number is the Go library's, the same
bit for bit as the calib command line prints for the same arrays and
options. numpy is the only dependency; scikit-learn (CalibratedClassifier)
and PyTorch (calib.torch) are used where installed.

    import calib
    ev = calib.evaluate(probs, labels)           # calib eval --json
    ev.headline.value, ev.headline.interval     # the number to report: canonical CE_1
    ev.paper_number.value                        # the 15-bin top-label ECE papers print
    calib.ece_binned(probs, labels, bins=15)     # one number
    cal = calib.Calibrator("temperature", logits=True).fit(val_logits, val_labels)
    cal.predict_proba(test_logits); cal.save("map.json")   # calib apply / calib fit -o
"""

from ._api import (
    Accumulator,
    Entry,
    Evaluation,
    bandwidth,
    ece_binned,
    ece_kde,
    ece_variational,
    ece_witness,
    evaluate,
    ks_error,
    smece,
    test,
    version,
)
from ._native import CalibError
from .calibrator import METHODS, Calibrator

__version__ = "0.1.0"


def __getattr__(name):
    # calib.CalibratedClassifier lives in calib.sklearn, which imports
    # scikit-learn: loaded when first asked for.
    if name == "CalibratedClassifier":
        from .sklearn import CalibratedClassifier

        return CalibratedClassifier
    raise AttributeError(f"module 'calib' has no attribute {name!r}")

__all__ = [
    "evaluate", "Evaluation", "Entry", "test", "bandwidth", "Accumulator",
    "ece_witness", "ece_kde", "ece_binned", "ks_error", "smece", "ece_variational",
    "Calibrator", "CalibratedClassifier", "METHODS", "CalibError", "version",
]
