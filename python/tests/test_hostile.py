"""40 hostile inputs: each raises ValueError with a message that says where
(the array, 1-based row and column) and what is wrong, as the command line
says it; none crashes the interpreter (the last test checks it is alive)."""

import numpy as np
import pytest

import calib
from conftest import strip_run

rng = np.random.default_rng(0)
P = rng.dirichlet(np.ones(3), size=50)
Y = rng.integers(0, 3, size=50)


def with_value(a, i, j, v):
    a = np.array(a, dtype=np.float64)
    a[i, j] = v
    return a


CASES = [
    # (id, call, substrings the message must hold)
    ("nan", lambda: calib.evaluate(with_value(P, 3, 1, np.nan), Y), ["probs", "row 4", "column 2", "not a finite number"]),
    ("inf", lambda: calib.evaluate(with_value(P, 0, 0, np.inf), Y), ["row 1", "column 1", "not a finite number"]),
    ("-inf logit", lambda: calib.evaluate(with_value(np.log(P), 7, 2, -np.inf), Y, logits=True), ["logits", "row 8", "column 3"]),
    ("negative", lambda: calib.evaluate(with_value(P, 5, 0, -0.25), Y), ["row 6", "column 1", "negative probability"]),
    ("above one", lambda: calib.evaluate(with_value(P, 9, 2, 1.5), Y), ["row 10", "column 3", "probability above 1"]),
    ("row sum", lambda: calib.evaluate(P * 1.1, Y), ["row 1", "does not sum to 1"]),
    ("label too big", lambda: calib.evaluate(P, np.r_[Y[:-1], 3]), ["row 50", "bad label", "outside 0..2"]),
    ("negative label", lambda: calib.evaluate(P, np.r_[-1, Y[1:]]), ["row 1", "bad label"]),
    ("fractional label", lambda: calib.evaluate(P, np.r_[0.5, Y[1:]].astype(float)), ["row 1", "not an integer"]),
    ("nan label", lambda: calib.evaluate(P, np.r_[np.nan, Y[1:]]), ["row 1", "not an integer"]),
    ("huge label", lambda: calib.evaluate(P, np.r_[2**40, Y[1:]].astype(np.int64)), ["row 1", "bad label"]),
    ("too few labels", lambda: calib.evaluate(P, Y[:-1]), ["49 labels for 50"]),
    ("labels 2-D", lambda: calib.evaluate(P, np.c_[Y, Y]), ["labels", "shape"]),
    ("string labels", lambda: calib.evaluate(P, Y.astype(str)), ["labels", "dtype"]),
    ("no labels", lambda: calib.evaluate(P, None), ["no labels"]),
    ("3-D probs", lambda: calib.evaluate(P.reshape(50, 3, 1), Y), ["probs", "shape"]),
    ("no columns", lambda: calib.evaluate(np.zeros((50, 0)), Y), ["no columns"]),
    ("empty", lambda: calib.evaluate(np.zeros((0, 3)), np.zeros(0, dtype=int)), ["no samples"]),
    ("strings", lambda: calib.evaluate(P.astype(str), Y), ["dtype"]),
    ("objects", lambda: calib.evaluate(np.array([[0.5, None]] * 2, dtype=object), [0, 1]), ["dtype"]),
    ("complex", lambda: calib.evaluate(P.astype(complex), Y), ["dtype"]),
    ("ragged list", lambda: calib.evaluate([[0.5, 0.5], [1.0]], [0, 1]), ["probs", "shape"]),
    ("weights negative", lambda: calib.evaluate(P, Y, weights=np.r_[-1.0, np.ones(49)]), ["weight"]),
    ("weights nan", lambda: calib.evaluate(P, Y, weights=np.r_[np.nan, np.ones(49)]), ["weight"]),
    ("weights all zero", lambda: calib.evaluate(P, Y, weights=np.zeros(50)), ["weight"]),
    ("weights length", lambda: calib.evaluate(P, Y, weights=np.ones(49)), ["weights", "shape"]),
    ("unknown option", lambda: calib.evaluate(P, Y, frobnicate=1), ["unknown flag: --frobnicate"]),
    ("bad metric", lambda: calib.evaluate(P, Y, metrics="ece_nope"), ["ece_nope"]),
    ("bad p", lambda: calib.evaluate(P, Y, p=0.5), ["--p", "0.5"]),
    ("bad bins", lambda: calib.evaluate(P, Y, bins=0), ["--bins"]),
    ("bad mode", lambda: calib.evaluate(P, Y, mode="sideways"), ["sideways"]),
    ("reserved option", lambda: calib.evaluate(P, Y, json=False), ["set by the caller"]),
    ("file option", lambda: calib.evaluate(P, Y, labels_file="x"), ["unknown flag"]),
    ("bad option value", lambda: calib.evaluate(P, Y, bins=object()), ["option value"]),
    ("stream option", lambda: calib.evaluate(P, Y, stream=True), ["array in memory"]),
    ("bad test", lambda: calib.test(P, Y, tests="nope"), ["nope"]),
    ("bad alpha", lambda: calib.test(P, Y, alpha=2), ["--alpha"]),
    ("bad bandwidth mode", lambda: calib.bandwidth(P, Y, mode="sideways"), ["sideways"]),
    ("bad method", lambda: calib.Calibrator("nope").fit(P, Y), ["method"]),
    ("map for other K", lambda: calib.Calibrator("isotonic").fit(P, Y).predict_proba(rng.dirichlet(np.ones(4), size=5)), ["K = 3", "K = 4"]),
]


def test_forty():
    assert len(CASES) == 40


@pytest.mark.parametrize("call,want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hostile(call, want):
    with pytest.raises(ValueError) as e:
        call()
    msg = str(e.value)
    for w in want:
        assert w in msg, f"{msg!r} lacks {w!r}"


def test_non_contiguous_is_read_right():
    """Non-contiguous and Fortran-ordered arrays are copied, not misread."""
    big = np.asfortranarray(np.c_[P, P])
    a = strip_run(calib.evaluate(big[:, :3], Y, metrics="ece_bin").to_dict())
    b = strip_run(calib.evaluate(np.ascontiguousarray(P), Y, metrics="ece_bin").to_dict())
    assert a == b
    c = calib.evaluate(P[::-1][::-1], Y[::1], metrics="brier").value("brier")
    assert c == calib.evaluate(P, Y, metrics="brier").value("brier")


def test_interpreter_alive_and_library_usable():
    assert calib.evaluate(P, Y, metrics="brier").value("brier") > 0
