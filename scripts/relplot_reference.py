#!/usr/bin/python3
"""Reference values of relplot's smECE for smooth/testdata/relplot.json.

Runs relplot's own code (apple/ml-calibration) at two commits, unmodified:
18ff21a (relplot 1.0.3) and e504a89 (relplot 1.0.1). Nothing of relplot is
committed here; extract the two trees first, e.g. from a clone:

    git -C ml-calibration archive 18ff21a src | tar -x -C /tmp/relplot/18ff21a
    git -C ml-calibration archive e504a89 src | tar -x -C /tmp/relplot/e504a89
    /usr/bin/python3 scripts/relplot_reference.py /tmp/relplot > smooth/testdata/relplot.json

Needs Debian's python3-numpy and python3-scipy. relplot's plotting imports
(matplotlib, seaborn, pandas, sklearn, deprecation) are replaced by empty
stand-ins: metrics.py and kernels.py use none of them.

The inputs: the two real sets of testdata/logits (softmax of the logits,
as relplot's multiclass_logits_to_confidences computes it), top-label and
each class's column, and small seeded synthetic sets stored inline.
"""
import importlib
import json
import sys

import numpy as np
import scipy.special

import reference_stubs


reference_stubs.install(["matplotlib", "matplotlib.pyplot", "matplotlib.collections", "seaborn",
                         "pandas", "sklearn", "sklearn.ensemble", "sklearn.base", "deprecation"])
sys.modules["sklearn.base"].BaseEstimator = object


def load_relplot(root):
    for k in [k for k in sys.modules if k == "relplot" or k.startswith("relplot.")]:
        del sys.modules[k]
    sys.path.insert(0, root + "/src")
    try:
        return importlib.import_module("relplot.metrics")
    finally:
        sys.path.pop(0)


def main(base):
    versions = {"relplot": load_relplot(base + "/18ff21a"), "relplot-1.0.1": None}
    new = versions["relplot"]
    kernels = sys.modules["relplot.kernels"]  # 1.0.3's, before 1.0.1 replaces it
    old = load_relplot(base + "/e504a89")
    versions["relplot-1.0.1"] = old

    def smece(conv, f, y, sigma=None):
        m = versions[conv]
        if sigma is None:
            fn = m.smECE if conv == "relplot" else m.smECE_fast
            v, s = fn(f, y, eps=0.001, return_width=True)
            return float(v), float(s)
        if conv == "relplot":
            return float(m.smECE_sigma(f, y, sigma)), sigma
        g = 200  # smECE_fast's grid at a given sigma: 200 x 4^k >= round(20/sigma)
        while round(20 / sigma) > g:
            g *= 4
        r = m.smooth_round_to_grid(f, f - y, eval_points=g) / len(f)
        return float(m.smooth_ece_interpolated(r, sigma)), sigma

    cases = []
    for name in ["cifar10_densenet121-flsd53", "cifar100_resnet110-brier"]:
        for split in ["test", "val"]:
            z = np.load(f"testdata/logits/{name}/{split}_logits.npy").astype(np.float64)
            lab = np.load(f"testdata/logits/{name}/{split}_labels.npy").reshape(-1)
            p = scipy.special.softmax(z, axis=-1)
            top, correct = new.multiclass_logits_to_confidences(z, lab)
            views = [("top_label", -1, top, correct)]
            if split == "test":
                for k in range(min(p.shape[1], 10)):
                    views.append(("class", k, p[:, k], (lab == k) * 1.0))
            for view, k, f, y in views:
                for conv in versions:
                    for sigma in [None, 0.05] if view == "top_label" else [None]:
                        v, s = smece(conv, f, y, sigma)
                        cases.append({"set": name, "split": split, "view": view, "class": k,
                                      "convention": conv, "sigma_arg": sigma or 0, "value": v, "sigma": s})
    # The diagram's curve and density (prepare_rel_diagram without the
    # bagging: KernelSmoother.predict and kde) at sigma*, on 200 points.
    curves = []
    for name in ["cifar10_densenet121-flsd53", "cifar100_resnet110-brier"]:
        z = np.load(f"testdata/logits/{name}/test_logits.npy").astype(np.float64)
        lab = np.load(f"testdata/logits/{name}/test_labels.npy").reshape(-1)
        f, y = new.multiclass_logits_to_confidences(z, lab)
        _, sigma = new.smECE(f, y, eps=0.001, return_width=True)
        t = np.linspace(0, 1, 200)
        ker = kernels.ReflectedGaussianKernel(sigma)
        mu, _ = ker.smooth(f, y, t)
        curves.append({"set": name, "split": "test", "view": "top_label", "sigma": float(sigma),
                       "mean": mu.tolist(), "density": ker.kde(f, t).tolist()})
    rng = np.random.default_rng(20261126)
    synth = []
    for n, kind in [(1, "uniform"), (2, "uniform"), (7, "uniform"), (60, "uniform"),
                    (500, "overconfident"), (500, "calibrated"), (300, "ends"), (200, "ties")]:
        if kind == "ends":
            f = rng.choice([0.0, 1.0, 0.5, 0.999, 0.001], size=n)
        elif kind == "ties":
            f = rng.choice([0.2, 0.4, 0.6, 0.8], size=n)
        else:
            f = rng.uniform(0, 1, size=n)
        if kind == "overconfident":
            y = (rng.uniform(size=n) < 0.5 + 0.6 * (f - 0.5)) * 1.0
        else:
            y = (rng.uniform(size=n) < f) * 1.0
        results = []
        for conv in versions:
            for sigma in [None, 0.1, 0.003, 1.0]:
                v, s = smece(conv, f, y, sigma)
                results.append({"convention": conv, "sigma_arg": sigma or 0, "value": v, "sigma": s})
        synth.append({"n": n, "kind": kind, "f": f.tolist(), "y": y.tolist(), "results": results})
    json.dump({"source": "relplot 1.0.3 (apple/ml-calibration 18ff21a) and 1.0.1 (e504a89), "
               "run by scripts/relplot_reference.py with numpy " + np.__version__ +
               " and scipy " + scipy.__version__,
               "real": cases, "synthetic": synth, "curves": curves}, sys.stdout, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
