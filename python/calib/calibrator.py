"""Recalibration maps with scikit-learn's conventions.

Calibrator fits one of calib fit's maps on validation predictions and
applies it (calib apply): the map is the JSON that calib fit writes, so a
map fitted here applies with ``calib apply`` and one fitted by ``calib fit``
loads here, with the same numbers bit for bit. CalibratedClassifier wraps
any fitted (or unfitted) scikit-learn classifier with such a map, as
scikit-learn's CalibratedClassifierCV does with its three methods (module calib.sklearn,
imported when first used: it needs scikit-learn).
"""

import json

import numpy as np

from . import _api, _native

__all__ = ["Calibrator", "METHODS", "LOGIT_METHODS"]

#: calib fit's methods (calib fit --help; recal.Methods(): a test checks
#: them against the Go library's registry).
METHODS = (
    "spline", "temperature", "vector", "matrix-odir", "dirichlet-odir",
    "isotonic", "histogram", "platt", "beta", "log-spline", "boost",
)


#: The methods whose maps calib fit fits on logits only (--logits):
#: recal.Method.NeedsLogits.
LOGIT_METHODS = ("temperature", "vector", "matrix-odir")


class _Params:
    """get_params/set_params from the __init__ signature (scikit-learn's
    protocol, without needing scikit-learn)."""

    @classmethod
    def _param_names(cls):
        import inspect

        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD]

    def get_params(self, deep=True):
        out = {}
        for k in self._param_names():
            v = getattr(self, k)
            out[k] = v
            if deep and hasattr(v, "get_params") and not isinstance(v, type):
                for kk, vv in v.get_params().items():
                    out[f"{k}__{kk}"] = vv
        return out

    def set_params(self, **params):
        names = self._param_names()
        nested = {}
        for k, v in params.items():
            key, sep, sub = k.partition("__")
            if key not in names:
                raise ValueError(f"invalid parameter {key!r} for {type(self).__name__}: valid parameters are {names}")
            if sep:
                nested.setdefault(key, {})[sub] = v
            else:
                setattr(self, key, v)
        for key, sub in nested.items():
            getattr(self, key).set_params(**sub)
        return self

    def __repr__(self):
        args = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._param_names())
        return f"{type(self).__name__}({args})"


class Calibrator(_Params):
    """A recalibration map fitted by calib (``calib fit --method METHOD``).

    Parameters: method, one of METHODS; logits, whether X holds logits (the
    maps of temperature, vector, matrix and dirichlet read logits; given
    probabilities they read log p); options, a dict of calib fit's other
    flags (``{"knots": 8}``, ``{"lambda": 0.01}``, ``{"scalar_mode":
    "one_vs_rest"}``).

    After fit: ``map_`` (the map as calib fit writes it, a JSON string),
    ``method_``, ``n_classes_`` (K), ``n_features_in_`` (columns of X),
    ``classes_`` (0..K-1). predict_proba(X) and transform(X) return the
    calibrated probabilities (n, K); predict(X) their arg-max.
    """

    def __init__(self, method="temperature", logits=False, options=None):
        self.method = method
        self.logits = logits
        self.options = options

    def fit(self, X, y, sample_weight=None):
        """Fit the map on validation predictions X (n, K) with labels y
        (weights: sample_weight) and return self."""
        if self.method not in METHODS:
            raise ValueError(f"method {self.method!r}: want one of {', '.join(METHODS)}")
        if self.options is not None and not isinstance(self.options, dict):
            raise ValueError(f"options={self.options!r}: want a dict of calib fit's options ({{'knots': 8}})")
        for k in ("logits", "method"):
            if k in (self.options or {}):
                raise ValueError(f"options: {k} is a parameter of Calibrator (Calibrator(method, logits=...)), not an option")
        opts = _api._options(dict(self.options or {}), method=self.method)
        self.map_ = _api._run("fit", X, y, sample_weight, self.logits, opts, name="X")
        self._set_fitted()
        return self

    def _set_fitted(self):
        doc = json.loads(self.map_)
        self.method_ = doc["method"]
        self.n_classes_ = int(doc["k"])
        self.classes_ = np.arange(self.n_classes_)
        self.input_ = doc["input"]
        self.n_features_in_ = self.n_classes_

    def _check_fitted(self):
        if not hasattr(self, "map_"):
            try:
                from sklearn.exceptions import NotFittedError
            except ImportError:  # pragma: no cover
                NotFittedError = AttributeError
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit (or load) first")

    def predict_proba(self, X):
        """The calibrated probabilities of X: an (n, K) float64 array whose
        rows are on the simplex (calib apply)."""
        self._check_fitted()
        x, dtype = _native.predictions(X, "X")
        code, msg, out = _native.backend().apply(self.map_, "X", bool(self.logits), x, dtype, self.n_classes_)
        _native.check(code, msg)
        return out

    transform = predict_proba

    def fit_transform(self, X, y, sample_weight=None):
        return self.fit(X, y, sample_weight).transform(X)

    def predict(self, X):
        """The arg-max class of the calibrated probabilities."""
        return np.argmax(self.predict_proba(X), axis=1)

    def save(self, path):
        """Write the map to path, as calib fit -o writes it."""
        self._check_fitted()
        with open(path, "w") as f:
            f.write(self.map_)

    @classmethod
    def load(cls, path, logits=None):
        """A Calibrator holding the map at path (written by calib fit or
        save). logits: whether X will hold logits (default: the map's
        input kind)."""
        with open(path) as f:
            text = f.read()
        try:
            doc = json.loads(text)
            method, kind, k = doc["method"], doc["input"], doc["k"]
            if isinstance(k, bool) or not isinstance(k, int) or k < 2:
                raise ValueError(f'"k" is {k!r}, not a number of classes')
        except (ValueError, KeyError, TypeError) as e:
            missing = f"no {e} key" if isinstance(e, KeyError) else str(e)
            raise ValueError(f"{path}: not a calib map: {missing}") from None
        c = cls(method=method, logits=(kind == "logits") if logits is None else logits)
        c.map_ = text
        c._set_fitted()
        return c

    def __getstate__(self):
        return dict(self.__dict__)

    def __setstate__(self, state):
        self.__dict__.update(state)

    def _more_tags(self):
        return {"requires_positive_X": True, "poor_score": True}


def _map_input(p, logits):
    """A classifier's probabilities as a map's input: float64 rows that sum
    to 1 (its float rounding renormalised), or for a logits map their
    logarithms (log 0 taken at the smallest positive float64, so finite)."""
    p = np.asarray(p, dtype=np.float64)
    p = np.clip(p, 0.0, 1.0)
    s = p.sum(axis=1, keepdims=True)
    p = p / np.where(s > 0, s, 1.0)
    if logits:
        return np.log(np.maximum(p, np.finfo(np.float64).tiny))
    return p
