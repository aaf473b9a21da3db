#!/usr/bin/python3
"""Reference values of other libraries' binned calibration numbers for
convention/testdata/reference.json.

Runs each library's own code on the real sets of testdata/logits (the test
splits; softmax of the logits by scipy) and on a binary set made from the
first (p = the probability of class 0, outcome [label == 0]). Nothing of
the libraries is committed here; extract them first, e.g.:

    git -C torchmetrics archive dab0333 src/torchmetrics | tar -x -C /tmp/tm
    git -C calibration-framework archive 2a3db8d netcal | tar -x -C /tmp/netcal
    git -C ml-calibration archive 18ff21a src | tar -x -C /tmp/relplot/18ff21a
    git -C outlier-exposure show e6ede98:utils/calibration_tools.py > /tmp/hendrycks/calibration_tools.py
    /usr/bin/python3 scripts/convention_reference.py > convention/testdata/reference.json

Needs Debian's python3-numpy, python3-scipy, python3-sklearn (1.2.1 here)
and python3-torch (1.13 here). What runs:

  sklearn       sklearn.calibration.calibration_curve (installed), both
                strategies: its prob_true and prob_pred (the non-empty
                bins' mean outcome and score).
  torchmetrics  binary_calibration_error and multiclass_calibration_error
                of src/torchmetrics/functional/classification/
                calibration_error.py with validate_args=False; the module's
                imports of torchmetrics' input formatting (whose checks
                validate_args skips, and which leave probabilities in
                [0, 1] as they are) are replaced by pass-throughs.
  netcal        netcal.metrics ECE, MCE and ACE (measure), unmodified.
  relplot       relplot.metrics.binnedECE, unmodified (plotting imports
                replaced by empty stand-ins).
  hendrycks     calib_err of utils/calibration_tools.py, unmodified.
"""
import importlib.util
import json
import sys
import types

import numpy as np
import scipy.special
import torch
from sklearn.calibration import calibration_curve

import reference_stubs


def load_file(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def torchmetrics_module(root):
    cm = types.ModuleType("torchmetrics.functional.classification.confusion_matrix")
    cm._binary_confusion_matrix_format = lambda preds, target, threshold=0.5, ignore_index=None, convert_to_labels=True: (preds.flatten(), target.flatten())
    cm._multiclass_confusion_matrix_format = lambda preds, target, ignore_index=None, convert_to_labels=True: (preds, target)
    cm._binary_confusion_matrix_tensor_validation = lambda *a, **k: None
    cm._multiclass_confusion_matrix_tensor_validation = lambda *a, **k: None
    comp = types.ModuleType("torchmetrics.utilities.compute")
    comp.normalize_logits_if_needed = lambda t, kind: t
    enums = types.ModuleType("torchmetrics.utilities.enums")
    enums.ClassificationTaskNoMultilabel = object
    for n in ["torchmetrics", "torchmetrics.functional", "torchmetrics.functional.classification", "torchmetrics.utilities"]:
        sys.modules[n] = types.ModuleType(n)
    sys.modules[cm.__name__], sys.modules[comp.__name__], sys.modules[enums.__name__] = cm, comp, enums
    return load_file("tm_calibration_error", root + "/src/torchmetrics/functional/classification/calibration_error.py")


def main():
    tm = torchmetrics_module("/tmp/tm")
    sys.path.insert(0, "/tmp/netcal")
    from netcal.metrics import ECE, MCE, ACE
    reference_stubs.install(["matplotlib", "matplotlib.pyplot", "matplotlib.collections", "seaborn", "pandas",
                             "sklearn.ensemble", "deprecation"])
    sys.path.insert(0, "/tmp/relplot/18ff21a/src")
    rp = importlib.import_module("relplot.metrics")
    hd = load_file("calibration_tools", "/tmp/hendrycks/calibration_tools.py")

    out = {"source": "scripts/convention_reference.py: scikit-learn 1.2.1, torchmetrics dab0333 on torch "
           + torch.__version__ + ", netcal 2a3db8d, relplot 18ff21a, outlier-exposure e6ede98; numpy "
           + np.__version__, "cases": []}
    for name in ["cifar10_densenet121-flsd53", "cifar100_resnet110-brier"]:
        z = np.load(f"testdata/logits/{name}/test_logits.npy").astype(np.float64)
        y = np.load(f"testdata/logits/{name}/test_labels.npy").reshape(-1).astype(np.int64)
        P = scipy.special.softmax(z, axis=-1)
        conf, correct = P.max(axis=1), (P.argmax(axis=1) == y) * 1.0
        views = [("multiclass", P, y, conf, correct)]
        if name.startswith("cifar10_"):
            p1 = P[:, 0].copy()
            y01 = (y == 0).astype(np.int64)
            views.append(("binary", p1, y01, p1, y01 * 1.0))
        for view, X, Y, f, o in views:
            for bins in [10, 15]:
                case = {"set": name, "split": "test", "view": view, "bins": bins}
                for strategy in ["uniform", "quantile"]:
                    pt, pp = calibration_curve(o, f, n_bins=bins, strategy=strategy)
                    case["sklearn_" + strategy] = {"prob_true": pt.tolist(), "prob_pred": pp.tolist()}
                tv = {}
                for norm in ["l1", "l2", "max"]:
                    if view == "binary":
                        r = tm.binary_calibration_error(torch.tensor(X), torch.tensor(Y), n_bins=bins, norm=norm, validate_args=False)
                    else:
                        r = tm.multiclass_calibration_error(torch.tensor(X), torch.tensor(Y), num_classes=X.shape[1], n_bins=bins, norm=norm, validate_args=False)
                    tv[norm] = float(r)
                case["torchmetrics"] = tv
                case["netcal"] = {"ece": float(ECE(bins=bins).measure(X, Y)), "mce": float(MCE(bins=bins).measure(X, Y)),
                                  "ace": float(ACE(bins=bins).measure(X, Y))}
                case["relplot_binned_ece"] = float(rp.binnedECE(f, o, nbins=bins))
                out["cases"].append(case)
            # calib_err takes the confidence of the predicted class: for
            # the binary view that of [1 - p, p].
            hf, ho = f, o
            if view == "binary":
                two = np.stack([1 - X, X], axis=1)
                hf, ho = two.max(axis=1), (two.argmax(axis=1) == Y) * 1.0
            out["cases"].append({"set": name, "split": "test", "view": view, "hendrycks": {
                p: float(hd.calib_err(hf.copy(), ho.copy(), p=p)) for p in ["1", "2", "infty"]}})
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
