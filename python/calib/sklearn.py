"""CalibratedClassifier: any scikit-learn classifier recalibrated by a calib
map (needs scikit-learn; calib.CalibratedClassifier imports this module
when first used)."""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.model_selection import StratifiedKFold, check_cv
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, check_X_y

from .calibrator import LOGIT_METHODS, Calibrator, _map_input

__all__ = ["CalibratedClassifier", "XFAIL_CHECKS"]

#: scikit-learn's common checks that CalibratedClassifier fails by design,
#: with the reason (check_estimator's expected_failed_checks; the
#: _xfail_checks tag of scikit-learn < 1.6).
_FOLDS = "the cross-fitting's folds depend on the samples, so a weight is not the same as removing or repeating a sample (scikit-learn marks this check so for CalibratedClassifierCV)"
XFAIL_CHECKS = {
    "check_sample_weights_invariance": _FOLDS,
    "check_sample_weight_equivalence_on_dense_data": _FOLDS,  # scikit-learn >= 1.6
}


class CalibratedClassifier(ClassifierMixin, BaseEstimator):
    """A classifier whose probabilities are recalibrated by a calib map, as
    scikit-learn's CalibratedClassifierCV but with any of calib's methods.

    estimator: a scikit-learn classifier with predict_proba (None: a
    LogisticRegression). method: isotonic by default (it passes
    scikit-learn's check_estimator); temperature and platt refuse data on
    which the classifier separates the classes perfectly (the fitted
    temperature would be 0) with a ValueError. cv: "prefit" (the estimator
    is fitted; the map is fitted on the X, y given to fit, which should be
    held out), or a number of folds k >= 2, a splitter or an iterable of
    (train, test) splits (the map is fitted on the estimator's
    out-of-fold probabilities, k stratified folds in order, then the
    estimator is refitted on all the data: CalibratedClassifierCV's
    ensemble=False). options: the Calibrator's (calib fit's flags).

    After fit: ``estimator_`` (the fitted classifier), ``calibrator_`` (a
    calib.Calibrator), ``classes_``, ``n_features_in_``.
    """

    def __init__(self, estimator=None, method="isotonic", cv=5, options=None):
        self.estimator = estimator
        self.method = method
        self.cv = cv
        self.options = options

    def _base(self):
        if self.estimator is not None:
            return self.estimator
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression()

    def fit(self, X, y, sample_weight=None):
        X, y = check_X_y(X, y, accept_sparse=False)
        check_classification_targets(y)
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        self.n_features_in_ = X.shape[1]
        if self.cv == "prefit":
            # The classes and their columns are the fitted estimator's; the
            # calibration labels are encoded against them.
            est = self._base()
            check_is_fitted(est)
            classes = np.asarray(est.classes_)
            yi = np.searchsorted(classes, y)
            unknown = (yi >= len(classes)) | (classes[np.minimum(yi, len(classes) - 1)] != y)
            if unknown.any():
                raise ValueError(f"y holds label {y[np.argmax(unknown)]!r}, which the prefit estimator does not know (its classes: {list(classes)})")
            self.classes_ = classes
            probs = est.predict_proba(X)
            self.estimator_ = est
        else:
            classes, yi = np.unique(y, return_inverse=True)
            if len(classes) < 2:
                raise ValueError(f"y holds one class ({classes[0]!r}): a classifier needs at least 2 classes")
            self.classes_ = classes
            probs = self._out_of_fold(X, yi, w, len(classes))
            self.estimator_ = _fit(clone(self._base()), X, yi, w)
        logits = self.method in LOGIT_METHODS
        self.calibrator_ = Calibrator(self.method, logits=logits, options=self.options).fit(_map_input(probs, logits), yi, w)
        return self

    def _out_of_fold(self, X, yi, w, n_classes):
        """The estimator's probabilities of each row from a fit on the other
        folds, in the columns of the classes 0..n_classes-1. cv: a number k
        of stratified folds in order (at most the smallest class's count;
        one fit on all rows when a class has a single row), a splitter
        (with split), or an iterable of (train, test) index arrays."""
        probs = np.zeros((len(yi), n_classes))
        if isinstance(self.cv, (int, np.integer)) and not isinstance(self.cv, bool):
            k = int(self.cv)
            if k < 2:
                raise ValueError(f"cv={self.cv!r}: want 'prefit', a number of folds >= 2, a splitter or (train, test) splits")
            counts = np.bincount(yi, minlength=n_classes)
            if counts.min() < 2:
                est = _fit(clone(self._base()), X, yi, w)
                probs[:, est.classes_] = est.predict_proba(X)
                return probs
            splits = StratifiedKFold(n_splits=max(2, min(k, int(counts.min())))).split(X, yi)
        else:
            splits = check_cv(self.cv, yi, classifier=True).split(X, yi)
        seen = np.zeros(len(yi), dtype=bool)
        for train, test in splits:
            est = _fit(clone(self._base()), X[train], yi[train], None if w is None else w[train])
            probs[np.ix_(test, est.classes_)] = est.predict_proba(X[test])
            seen[test] = True
        if not seen.all():
            raise ValueError(f"cv: the splits leave {int((~seen).sum())} rows out of every test fold: the map needs an out-of-fold probability for every row")
        return probs

    def predict_proba(self, X):
        check_is_fitted(self, "calibrator_")
        X = check_array(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting {self.n_features_in_} features as input")
        return self.calibrator_.predict_proba(_map_input(self.estimator_.predict_proba(X), self.calibrator_.logits))

    def predict(self, X):
        p = self.predict_proba(X)  # NotFittedError before classes_ is read
        return self.classes_[np.argmax(p, axis=1)]

    def _more_tags(self):  # scikit-learn < 1.6
        return {"_xfail_checks": dict(XFAIL_CHECKS)}

    def __sklearn_tags__(self):  # scikit-learn >= 1.6 (the default tags)
        return super().__sklearn_tags__()


def _fit(est, X, y, w):
    return est.fit(X, y) if w is None else est.fit(X, y, sample_weight=w)
