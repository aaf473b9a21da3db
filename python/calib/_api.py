"""calib's functions over arrays: each runs the calib command of the same
name in the Go library, on the caller's arrays, and returns what its --json
prints."""

import json
import math
import numbers
import os

from . import _native
from ._native import CalibError

__all__ = [
    "Evaluation", "Entry", "evaluate", "test", "bandwidth", "Accumulator",
    "ece_witness", "ece_kde", "ece_binned", "ks_error", "smece", "ece_variational",
    "version",
]


def _options(options, **named):
    """The command's flags: options (keys are flag names, "_" for "-") and
    the named ones that are not None. Each value is checked here, naming
    its keyword: a number (finite), a string, a boolean, or a list of
    them."""
    out = {}
    for k, v in list(options.items()) + list(named.items()):
        if v is None:
            continue
        if isinstance(v, (list, tuple)):
            v = [_scalar(k, e) for e in v]
        else:
            v = _scalar(k, v)
        out[k] = v
    return out


def _scalar(key, v):
    # numpy scalars, and anything with __index__/__float__, as JSON numbers;
    # a float keeps every bit (repr is the shortest round-trip form).
    if isinstance(v, (bool, str)) or v is None:
        return v
    if hasattr(v, "item"):
        if getattr(v, "size", 1) != 1:
            raise ValueError(f"{key}: an array of shape {getattr(v, 'shape', '?')}: want a number, string, boolean or a list of them")
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(f"{key}={v}: not a finite number")
    if isinstance(v, (bool, int, float, str)):
        return v
    raise ValueError(f"{key}: option value {v!r}: want a number, string, boolean or a list of them")


def _flag(key, v):
    """v, a boolean keyword's value: True or False (numpy's too), never a
    string such as "false", which Python reads as true."""
    if isinstance(v, bool) or (hasattr(v, "dtype") and getattr(v, "dtype", None) == bool and getattr(v, "size", 0) == 1):
        return bool(v)
    raise ValueError(f"{key}={v!r}: want True or False")


def _run(command, probs, labels, weights, logits, options, name=None, spelled=None):
    """Run command on the arrays with options; spelled maps a flag whose
    keyword is spelled otherwise (bandwidth_objective) to that keyword
    (objective), for the messages."""
    logits = _flag("logits", logits)
    name = name or ("logits" if logits else "probs")
    x, dtype, y, lcode, w = _native.arrays(probs, labels, weights, name)
    if logits:
        options = dict(options, logits=True)
    code, msg = _native.backend().run(command, name, options, x, dtype, y, lcode, w)
    _native.check(code, msg, spelled)
    return msg


class Entry(dict):
    """One entry of an evaluation (a dict of calib eval --json's fields:
    metric, notion, p, value, root, and the estimator's own), also readable
    as attributes: e.value, e.interval.

    Each number has one interval, and e.lo, e.hi are its ends (None where
    it has none): the estimator's own, "interval" (ece_variational's
    cross-fit interval, a stream's sampling intervals and bounds; with
    interval_kind "exact", every row evaluated, there is none), or else the
    bootstrap interval "ci" (ci=True), as calib eval's table shows it
    (Go's evaluate.Result.OneInterval)."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def _one_interval(self):
        own = self.get("interval")
        if own is not None and len(own) == 2:
            return None if self.get("interval_kind") == "exact" else own
        ci = self.get("ci")
        return ci if ci is not None and len(ci) == 2 else None

    @property
    def lo(self):
        """The lower end of the entry's one interval, or None."""
        iv = self._one_interval()
        return None if iv is None else iv[0]

    @property
    def hi(self):
        """The upper end of the entry's one interval, or None."""
        iv = self._one_interval()
        return None if iv is None else iv[1]

    def __repr__(self):
        what = " ".join(f"{k}={self[k]}" for k in ("metric", "notion", "p", "r") if self.get(k) is not None)
        return f"<Entry {what} value={self.get('value')}>"


class Evaluation:
    """The result of evaluate: calib eval --json's object.

    ``results`` lists the entries (Entry); ``ev["ece_bin"]`` is the first
    entry of that metric, ``ev.get(metric, notion=..., p=...)`` the first
    that matches, ``ev.value(...)`` its value. ``to_json()`` returns the
    JSON text as the CLI prints it, ``to_dict()`` the parsed object and
    ``to_pandas()`` a DataFrame of the entries (pandas needed)."""

    def __init__(self, text):
        self._text = text
        self._doc = json.loads(text)
        self.results = [Entry(r) for r in self._doc.get("results", [])]
        self.n = self._doc.get("n")
        self.k = self._doc.get("k")
        self.warnings = self._doc.get("warnings", [])

    def to_json(self):
        return self._text

    def to_dict(self):
        return json.loads(self._text)

    def __iter__(self):
        return iter(self.results)

    def __len__(self):
        return len(self.results)

    def __getitem__(self, key):
        if isinstance(key, int):
            return self.results[key]
        if isinstance(key, tuple):
            return self.get(*key)
        e = self.get(key)
        if e is None:
            raise KeyError(key)
        return e

    def __getattr__(self, key):
        if key.startswith("_"):
            raise AttributeError(key)
        e = self.get(key)
        if e is None:
            raise AttributeError(f"no entry for metric {key!r}; metrics: {sorted({r['metric'] for r in self.results})}")
        return e

    @property
    def headline(self):
        """The entry to report: how miscalibrated the model is (the canonical
        CE_1 of ece_variational, with its interval), as the document's
        "headline" key names it (Go's evaluate.Headline: defined there
        only), or None when the evaluation did not compute it."""
        return self._ref("headline")

    @property
    def paper_number(self):
        """The number papers print (the 15-bin top-label ECE), as the
        document's "paper_number" key names it, or None."""
        return self._ref("paper_number")

    def _ref(self, name):
        ref = self._doc.get(name)
        if not ref:
            return None
        for e in self.results:
            if all(e.get(k) == v for k, v in ref.items()):
                return e
        return None

    def get(self, metric, notion=None, p=None, r=None):
        """The first entry of metric (with that notion, exponent p and, for
        ks, r, where given), or None."""
        for e in self.results:
            if e.get("metric") != metric:
                continue
            if notion is not None and e.get("notion") != notion:
                continue
            if p is not None and e.get("p") != p:
                continue
            if r is not None and e.get("r") != r:
                continue
            return e
        return None

    def value(self, metric, notion=None, p=None, r=None):
        """The value of get(metric, notion, p, r); KeyError if none."""
        e = self.get(metric, notion, p, r)
        if e is None:
            raise KeyError((metric, notion, p, r))
        return e["value"]

    def to_pandas(self):
        import pandas as pd  # optional dependency

        return pd.DataFrame(self.results)

    def __repr__(self):
        lines = [f"<Evaluation n={self.n} K={self.k}"]
        for e in self.results:
            what = " ".join(str(e[k]) for k in ("metric", "notion") if e.get(k) is not None)
            if e.get("p") is not None:
                what += f" p={e['p']}"
            if e.get("r") is not None:
                what += f" r={e['r']}"
            lines.append(f"  {what}: {e.get('value')}")
        return "\n".join(lines) + ">"


def evaluate(probs, labels, *, logits=False, weights=None, metrics=None, mode=None, p=None, ci=False, seed=None, workers=None, **options):
    """Measure the calibration of predictions: ``calib eval --json`` on the
    arrays.

    probs: (n, K) probabilities (rows on the simplex), or logits with
    ``logits=True`` (softmax; one column: sigmoid); a vector is the binary
    case's p1. labels: n integers in 0..K-1. weights: n sample weights
    (None: all 1). metrics, mode, p, ci, seed, workers and every other
    keyword are calib eval's flags (``bins=15``, ``convention="sklearn"``,
    ``p_values=True``, ...): the same names, checks and numbers as the
    command line. Returns an Evaluation. Bad input raises ValueError with
    the command line's message (which names the 1-based row and column).

    Read ``ev.headline`` first: the number to report, how miscalibrated
    the model is (the canonical CE_1 = E||E[Y|f(X)] - f(X)||_1 by
    ece_variational, the cross-fitted gain of the best recalibration
    family), with its one interval (``.lo``, ``.hi``); ``ev.paper_number``
    is the 15-bin top-label ECE papers print.

    >>> import numpy as np, calib
    >>> rng = np.random.default_rng(0)
    >>> probs = rng.dirichlet(np.ones(3), size=2000)
    >>> labels = np.array([rng.choice(3, p=row) for row in probs])
    >>> ev = calib.evaluate(probs, labels)
    >>> h = ev.headline
    >>> h.metric, h.notion, h.p
    ('ece_variational', 'canonical', 1)
    >>> h.lo <= h.value <= h.hi and h.lo <= 0.05
    True
    >>> ev.paper_number.metric, ev.paper_number.bins
    ('ece_bin', 15)

    Definitions (see docs/metrics.md): ece_kde is the ECE^KDE estimate of
    CE_p^p = E||E[Y|f(X)] - f(X)||_p^p with a Dirichlet kernel (paper eq. 2),
    ece_bin the binned ECE sum_b (n_b/n) |acc_b - conf_b|^p, ks the
    Kolmogorov-Smirnov error max_t |E[(Y - f) 1{f <= t}]| (splines paper
    eq. 7), ece_witness the cross-fitted witness lower bound of CE_p.
    """
    opts = _options(options, metrics=metrics, mode=mode, p=p, ci=_flag("ci", ci) or None, seed=seed, workers=workers)
    return Evaluation(_run("eval", probs, labels, weights, logits, opts))


def test(probs, labels, *, logits=False, weights=None, tests=None, resamples=None, alpha=None, seed=None, workers=None, max_seconds=None):
    """Test whether the predictions are calibrated: ``calib test --json`` on
    the arrays. tests: names (list or comma-separated; "all"), default the
    CLI's. max_seconds: the bound on each test's run time estimated from n,
    K, resamples and workers before any runs (default 60; 0: no bound): a
    named test past it raises ValueError naming its estimate, the default
    list and "all" leave it out, saying so in the answer. Returns the parsed
    JSON: "alpha", "answer" (the verdict in words) and "tests", one entry
    per test and notion (statistic, p_value, reject).

    >>> import numpy as np, calib
    >>> rng = np.random.default_rng(0)
    >>> probs = rng.dirichlet(np.ones(3), size=1000)
    >>> labels = np.array([rng.choice(3, p=row) for row in probs])
    >>> r = calib.test(probs, labels, tests="ks,kuiper", resamples=199)
    >>> r["alpha"], sorted({t["test"] for t in r["tests"]}), any(t["reject"] for t in r["tests"])
    (0.05, ['ks', 'kuiper'], False)
    >>> r["answer"].startswith("no evidence of miscalibration")
    True
    """
    if isinstance(tests, str):
        tests = [t.strip() for t in tests.split(",")]
    opts = _options({}, tests=tests, resamples=resamples, alpha=alpha, seed=seed, workers=workers, max_seconds=max_seconds)
    return json.loads(_run("test", probs, labels, weights, logits, opts))


def bandwidth(probs, labels, *, logits=False, weights=None, mode=None, objective=None, no_refine=None, workers=None):
    """Choose the ECE^KDE bandwidth by leave-one-out maximum likelihood:
    ``calib bandwidth --json`` on the arrays. Returns the parsed JSON
    (``["bandwidth"]`` is h)."""
    opts = _options({}, mode=mode, bandwidth_objective=objective, no_refine=no_refine, workers=workers)
    return json.loads(_run("bandwidth", probs, labels, weights, logits, opts, spelled={"bandwidth_objective": "objective"}))


def _one(name, value, valid):
    """value, one of valid (a dict: alias -> name), or ValueError naming
    the keyword."""
    if not isinstance(value, str) or value not in valid:
        raise ValueError(f"{name}={value!r}: want one of {', '.join(sorted(set(valid)))}")
    return valid[value]


def _one_p(p):
    """p, one number >= 1, or ValueError (a list of p gives several
    entries: calib.evaluate returns them all)."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not (float(p) >= 1) or math.isinf(float(p)):
        raise ValueError(f"p={p!r}: want one number >= 1 (for several, calib.evaluate(..., p=[...]) gives every entry)")
    return p


def _own(options, function, *keys):
    """Refuse, naming the keyword, the options that the one-number
    function sets itself (they would collide or change which entry it
    returns)."""
    for k in keys:
        if k in options:
            raise ValueError(f"{k}: {function} sets it itself; for other {k} use calib.evaluate(probs, labels, {k}=...)")


def _entry(ev, metric, notion=None, p=None, r=None):
    e = ev.get(metric, notion, p, r)
    if e is None:
        have = sorted({x.get("notion", "") for x in ev.results if x.get("metric") == metric})
        raise ValueError(f"this data has no {metric} entry of notion {notion} (it has: {', '.join(have) or 'none'})")
    return _value(e, metric, notion)


def _value(e, metric, notion):
    """The value of entry e, or ValueError with its error."""
    if e.get("error"):
        raise ValueError(f"{metric} ({notion}): {e['error']}")
    return e["value"]


def ece_witness(probs, labels, *, p=1, logits=False, weights=None, **options):
    """The canonical calibration error CE_p (p = 1 or 2) by the cross-fitted
    witness (the value of calib eval's ece_witness entry)."""
    if isinstance(p, bool) or p not in (1, 2):
        raise ValueError(f"p={p!r}: ece_witness estimates CE_1 (p=1) and CE_2^2 (p=2)")
    _own(options, "ece_witness", "metrics")
    ev = evaluate(probs, labels, logits=logits, weights=weights, metrics="ece_witness", p=p, **options)
    return _entry(ev, "ece_witness", "canonical", p)


def ece_kde(probs, labels, *, p=1, mode="canonical", bandwidth="auto", logits=False, weights=None, **options):
    """The ECE^KDE estimate of CE_p^p (ECE^KDE paper eq. 2) for mode
    (canonical, top_label, class_wise or binary) at the bandwidth (a number,
    or "auto": leave-one-out maximum likelihood)."""
    notion = _one("mode", mode, {"canonical": "canonical", "top_label": "top_label", "class_wise": "class_wise",
                                 "marginal": "class_wise", "binary": "binary"})
    _own(options, "ece_kde", "metrics")
    ev = evaluate(probs, labels, logits=logits, weights=weights, metrics="ece_kde", mode=notion, p=_one_p(p), bandwidth=bandwidth, **options)
    return _entry(ev, "ece_kde", notion, p)


def ece_binned(probs, labels, *, p=1, bins=15, mode="top_label", binning=None, convention=None, logits=False, weights=None, **options):
    """The binned ECE sum_b (n_b / n) |acc_b - conf_b|^p of the top-label
    confidence (mode="top_label", the usual ECE) or per class (class_wise)
    with equal-width bins (binning="equal_mass": equal-mass) under a tool's
    convention (convention="sklearn", "torchmetrics", ...).

    Three rows, each alone in its bin: confidences 0.8, 0.6, 0.7, the first
    and last right, so (|1 - 0.8| + |0 - 0.6| + |1 - 0.7|) / 3:

    >>> import calib
    >>> round(calib.ece_binned([[0.8, 0.2], [0.6, 0.4], [0.3, 0.7]], [0, 1, 1]), 12)
    0.366666666667
    """
    notion = _one("mode", mode, {"top_label": "top_label", "class_wise": "class_wise", "marginal": "class_wise",
                                 "canonical": "canonical", "binary": "binary"})
    _own(options, "ece_binned", "metrics")
    ev = evaluate(probs, labels, logits=logits, weights=weights, metrics="ece_bin", p=_one_p(p), bins=bins, binning=binning, convention=convention, **options)
    return _entry(ev, "ece_bin", notion, p)


def ks_error(probs, labels, *, logits=False, weights=None, **options):
    """The top-label Kolmogorov-Smirnov calibration error
    max_t |E[(1{y = argmax f} - max f) 1{max f <= t}]| (splines paper eq. 7,
    12); for one column (binary input) the KS error of p1.

    The same three rows in order of confidence (0.6 wrong, 0.7 and 0.8
    right) give the cumulative sums (0 - 0.6) / 3, then + 0.3 / 3, + 0.2 /
    3, whose largest size is 0.2:

    >>> import calib
    >>> round(calib.ks_error([[0.8, 0.2], [0.6, 0.4], [0.3, 0.7]], [0, 1, 1]), 12)
    0.2
    """
    _own(options, "ks_error", "metrics", "ks_r")
    ev = evaluate(probs, labels, logits=logits, weights=weights, metrics="ks", **options)
    for notion, r in (("top_r", 1), ("binary", None)):
        e = ev.get("ks", notion, r=r)
        if e is not None:
            return _value(e, "ks", notion)
    raise CalibError("calib eval gave no top-label or binary ks entry")


def smece(probs, labels, *, logits=False, weights=None, **options):
    """relplot's smooth ECE (smECE) of the top-label confidence (binary
    input: of p1)."""
    _own(options, "smece", "metrics", "mode")
    ev = evaluate(probs, labels, logits=logits, weights=weights, metrics="smece", **options)
    for notion in ("top_label", "binary"):
        e = ev.get("smece", notion)
        if e is not None:
            return _value(e, "smece", notion)
    raise CalibError("calib eval gave no top-label or binary smece entry")


def ece_variational(probs, labels, *, logits=False, weights=None, **options):
    """The canonical L1 calibration error by the cross-fitted variational
    estimate (the gain of the best recalibration map; the number the README
    says to report at any K). Returns the Entry (value, lo, hi, family)."""
    _own(options, "ece_variational", "metrics", "mode")
    ev = evaluate(probs, labels, logits=logits, weights=weights, metrics="ece_variational", mode="canonical", **options)
    e = ev.get("ece_variational", "canonical", p=1)
    if e is None:
        raise CalibError("calib eval gave no canonical ece_variational entry")
    _value(e, "ece_variational", "canonical")
    return e


class Accumulator:
    """A streamed evaluation fed batch by batch: calib eval --stream's
    passes, for a training loop or a data loader.

        acc = calib.Accumulator(logits=True)
        for x, y in loader:
            acc.add(model(x), y)
        if acc.passes == 2:            # the default metrics make two
            acc.second_pass()
            for x, y in loader:        # the same rows, in the same order
                acc.add(model(x), y)
        ev = acc.finish()              # an Evaluation
        ev.headline                    # ece_variational's canonical CE_1

    The keywords are calib eval's flags, as for evaluate; the default
    metrics are calib eval --stream's (the headline, ece_variational, with
    ece_bin, ks, brier, nll, accuracy and confidence). ece_variational
    fits its maps on a bounded sample of the first pass and sums every
    row's gains in the second; ece_kde, ece_witness, mmce, sharpness and
    data-dependent bins also need a second pass. With one-pass metrics
    only (e.g. metrics="ece_bin,ks,nll,brier") passes is 1 and finish()
    follows the first pass. The result equals calib eval --stream on the
    rows in the order they were added. The second pass must give the same
    rows in the same order (a loader that shuffles must not reshuffle: a
    mismatch is an error, not a wrong number). merge(other) adds another
    accumulator's first-pass rows (made with the same options, in this
    process or, through pickle, in another: a data loader's workers); a
    second pass is made by the accumulator that holds every row. An
    Accumulator pickles as its state, in either pass.
    """

    ONE_PASS_METRICS = "ece_bin,ks,brier,nll,accuracy,confidence"
    """The default metrics less ece_variational: all one pass."""

    def __init__(self, *, logits=False, metrics=None, name="batch", **options):
        if not isinstance(name, str) or not name:
            raise ValueError(f"name={name!r}: want a string (what the messages call the batches)")
        self._options = _options(dict(options), metrics=metrics, logits=True if _flag("logits", logits) else None)
        self._name = name
        self._open(None, None, None)

    def _open(self, state, source, kernel_state):
        self._backend = _native.backend()
        code, msg = self._backend.stream_new(self._name, self._options, state, source, kernel_state)
        _native.check(code, msg)
        h = json.loads(msg)
        self._h, self._pid, self._gen = int(h["handle"]), os.getpid(), self._backend.generation
        self._passes, self._pass, self._source = int(h["passes"]), int(h["pass"]), h["source"]

    @property
    def passes(self):
        """The number of passes over the data the metrics make: 1 or 2."""
        return self._passes

    @property
    def current_pass(self):
        """The pass the rows added now go to: 1, or 2 after second_pass()."""
        return self._pass

    def _check(self):
        """The backend holding this accumulator's sums, if they are still
        there: not in a forked child (the parent's library or worker), not
        after the out-of-process worker restarted."""
        if os.getpid() != self._pid:
            raise _native.CalibError(f"calib: this Accumulator was made in process {self._pid}; after fork() it cannot be used in process {os.getpid()}: send it (it pickles as its state) or make a new one")
        if self._backend.generation != self._gen:
            raise _native.CalibError("calib: the out-of-process backend holding this Accumulator restarted (a Ctrl-C or a crash stopped it): its rows are lost")
        return self._backend

    def add(self, probs, labels, weights=None):
        """Add a batch: (m, K) predictions (logits if the accumulator was
        made with logits=True), m labels, m weights or None. Returns the
        number of rows added so far in the current pass."""
        if labels is None:
            raise ValueError("labels: a batch needs its labels")
        x, dtype, y, lcode, w = _native.arrays(probs, labels, weights, "logits" if self._options.get("logits") else "probs")
        code, msg = self._check().stream_add(self._h, x, dtype, y, lcode, w)
        _native.check(code, msg)
        return int(msg)

    def merge(self, other):
        """Add the rows of another Accumulator (same options). Returns the
        number of rows."""
        if not isinstance(other, Accumulator):
            raise TypeError(f"merge takes an Accumulator, not {type(other).__name__}")
        b = self._check()
        if other._check() is not b:
            raise _native.CalibError("calib: the two accumulators live in different backends")
        code, msg = b.stream_merge(self._h, other._h)
        _native.check(code, msg)
        return int(msg)

    def second_pass(self):
        """Begin the second pass (passes == 2): the maps of ece_variational
        are fitted on the first pass's samples; then add every row again,
        in the same order, and finish()."""
        code, msg = self._check().stream_pass(self._h)
        _native.check(code, msg)
        self._pass = 2

    def state(self):
        """The first pass's sums as JSON (evaluate.Sums's state, the
        --stream state)."""
        code, msg = self._check().stream_state(self._h)
        _native.check(code, msg)
        return msg

    def finish(self):
        """The Evaluation of the rows added so far (more may be added
        after)."""
        code, msg = self._check().stream_finish(self._h)
        _native.check(code, msg)
        return Evaluation(msg)

    def __getstate__(self):
        st = {"options": self._options, "name": self._name, "state": self.state(), "source": self._source}
        if self._pass == 2:
            code, msg = self._check().stream_kernel_state(self._h)
            _native.check(code, msg)
            st["kernel_state"] = msg
        return st

    def __setstate__(self, st):
        self._options, self._name = st["options"], st["name"]
        self._open(st["state"], st.get("source"), st.get("kernel_state"))

    def __del__(self):
        h, b = getattr(self, "_h", None), getattr(self, "_backend", None)
        if h is None or b is None or not _native.same_process(b) or b.generation != getattr(self, "_gen", None):
            return
        if isinstance(b, _native._Worker) and not b.alive():
            return  # never start a worker only to free a handle
        try:
            b.stream_free(h)
        except Exception:  # interpreter shutdown
            pass


def version():
    """The version of the Go library (calib --version)."""
    return _native.backend().version()
