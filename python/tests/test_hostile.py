"""40 hostile inputs: each raises ValueError with a message that says where
(the array, 1-based row and column) and what is wrong, as the command line
says it; none crashes the interpreter (the last test checks it is alive)."""

import json

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
    ("unknown option", lambda: calib.evaluate(P, Y, frobnicate=1), ["unknown option: frobnicate"]),
    ("bad metric", lambda: calib.evaluate(P, Y, metrics="ece_nope"), ["ece_nope"]),
    ("bad p", lambda: calib.evaluate(P, Y, p=0.5), ['p "0.5": want a number']),
    ("bad bins", lambda: calib.evaluate(P, Y, bins=0), ['bins "0": want an integer']),
    ("bad mode", lambda: calib.evaluate(P, Y, mode="sideways"), ["sideways"]),
    ("reserved option", lambda: calib.evaluate(P, Y, json=False), ["set by the caller"]),
    ("file option", lambda: calib.evaluate(P, Y, labels_file="x"), ["unknown option: labels_file"]),
    ("bad option value", lambda: calib.evaluate(P, Y, bins=object()), ["option value"]),
    ("stream option", lambda: calib.evaluate(P, Y, stream=True), ["array in memory"]),
    ("bad test", lambda: calib.test(P, Y, tests="nope"), ["nope"]),
    ("bad alpha", lambda: calib.test(P, Y, alpha=2), ['alpha "2": want a number']),
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


# Hostile inputs found by the third round (the Python package and the C
# ABI): each now a clear ValueError, or the right answer.

def test_methods_are_the_go_registry():
    reg = calib._native.backend().registry()
    assert list(calib.METHODS) == reg["methods"]
    from calib.calibrator import LOGIT_METHODS
    assert list(LOGIT_METHODS) == reg["logit_methods"]
    for m in calib.METHODS:  # every advertised method fits
        x = np.log(P) if m in LOGIT_METHODS else P
        calib.Calibrator(m, logits=m in LOGIT_METHODS).fit(x, Y)


def test_one_number_functions_take_one_notion_and_p():
    # marginal is read as class_wise, as the command line reads it.
    assert calib.ece_kde(P, Y, mode="marginal", bandwidth=0.1) == calib.ece_kde(P, Y, mode="class_wise", bandwidth=0.1)
    for call, want in [(lambda: calib.ece_kde(P, Y, mode="all"), "mode='all'"),
                       (lambda: calib.ece_kde(P, Y, p=[1, 2]), "p=[1, 2]"),
                       (lambda: calib.ece_binned(P, Y, mode="bogus"), "mode='bogus'"),
                       (lambda: calib.ece_witness(P, Y, p=3), "p=3"),
                       (lambda: calib.ece_kde(P, Y, mode="binary", bandwidth=0.1), "the binary notion needs one-column input")]:
        with pytest.raises(ValueError, match=want.replace("[", r"\[").replace("]", r"\]")):
            call()


def test_empty_batch_returns_the_running_count():
    acc = calib.Accumulator(metrics="brier")
    acc.add(P[:10], Y[:10])
    assert acc.add(P[:0], Y[:0]) == 10


def test_map_without_k_is_not_a_map(tmp_path):
    doc = json.loads(calib.Calibrator("isotonic").fit(P, Y).map_)
    del doc["k"]
    (tmp_path / "m.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="not a calib map: no 'k' key"):
        calib.Calibrator.load(tmp_path / "m.json")


def test_uint64_label_past_int64():
    y = Y.astype(np.uint64)
    y[4] = 2**63
    with pytest.raises(ValueError, match="row 5: bad label: 9223372036854775808"):
        calib.evaluate(P, y)


def test_a_name_is_never_a_flag():
    for name in ("-h", "--stream", "--metrics=all"):
        out = json.loads(calib._api._run("eval", P, Y, None, False, {"metrics": "brier"}, name=name))
        assert [e["metric"] for e in out["results"]] == ["brier"]


def test_apply_into_no_buffer():
    b = calib._native.backend()
    if not hasattr(b, "lib"):
        pytest.skip("the out-of-process backend")
    import ctypes
    m = calib.Calibrator("isotonic").fit(P, Y).map_
    x = np.ascontiguousarray(P)
    out = ctypes.c_void_p()
    code = b.lib.calib_apply(0, ('{"map":' + m + '}').encode(), x.ctypes.data, 0, x.shape[0], x.shape[1], None, 0, ctypes.byref(out))
    assert code == 2 and "NULL buffer" in b._string(out.value)


def test_messages_name_keywords():
    """Options are named as keywords in Python's messages (ci, ks_r), not
    as the command line's flags (--ci, --ks-r)."""
    for call, want in [(lambda: calib.Accumulator(ci=True), "ci: bootstrap intervals need"),
                       (lambda: calib.Accumulator(convention="sklearn"), "convention: a streamed evaluation"),
                       (lambda: calib.Accumulator(metrics="tce"), "metrics: tce is not available"),
                       (lambda: calib.evaluate(P, Y, ks_r=7, metrics="ks"), "ks_r 7: ")]:
        with pytest.raises(ValueError) as e:
            call()
        assert want in str(e.value) and "--" not in str(e.value), str(e.value)


def test_logits_given_as_probabilities_suggest_logits_true():
    """Logits passed without logits=True (negative entries, entries above 1,
    or rows in [0, 1] far from summing to 1) raise a ValueError that says
    to pass logits=True, in the keyword's spelling; a rounding-sized
    negative probability does not."""
    z = rng.normal(size=(50, 3)) * 3
    calls = [lambda: calib.evaluate(np.abs(z) * -1, Y), lambda: calib.evaluate(z, Y),
             lambda: calib.evaluate(np.full((50, 3), 0.9), Y), lambda: calib.Accumulator().add(z, Y)]
    for call in calls:
        with pytest.raises(ValueError) as e:
            call()
        assert "(logits? use logits=True)" in str(e.value) and "--" not in str(e.value), str(e.value)
    with pytest.raises(ValueError) as e:
        calib.evaluate(with_value(P, 5, 0, -1e-9), Y)
    assert "negative probability" in str(e.value) and "logits" not in str(e.value), str(e.value)


def test_a_test_past_its_time_bound_is_refused_naming_its_estimate():
    """prior_score asked for by name at K = 10,000, n = 50 (about 600 s
    estimated on 2 cores, past the 60 s default) raises ValueError at once,
    naming the estimate and max_seconds; max_seconds=0 lifts the bound."""
    p = rng.dirichlet(np.ones(10_000), size=50)
    y = rng.integers(0, 10_000, size=50)
    with pytest.raises(ValueError) as e:
        calib.test(p, y, tests="prior_score")
    msg = str(e.value)
    assert "prior_score would take about" in msg and "n = 50, K = 10000" in msg and "max_seconds 0 runs it anyway" in msg and "--" not in msg, msg
    with pytest.raises(ValueError, match="past max_seconds 1e-09"):
        calib.test(P, Y, tests="ece_witness", resamples=19, max_seconds=1e-9)
    r = calib.test(P, Y, tests="ece_witness", resamples=19, max_seconds=0)
    assert [t["test"] for t in r["tests"]] == ["ece_witness"]


def test_option_values_are_checked_by_keyword():
    for call, want in [(lambda: calib.evaluate(P, Y, metrics="smece", smece_sigma=float("nan")), "smece_sigma=nan: not a finite number"),
                       (lambda: calib.evaluate(P, Y, bins=np.array([10, 15])), "bins: an array of shape (2,)"),
                       (lambda: calib.evaluate(P, Y, logits="false"), "logits='false': want True or False"),
                       (lambda: calib.Accumulator(logits="false"), "logits='false': want True or False"),
                       (lambda: calib.evaluate(P, Y, metrics=[]), 'metrics "": names nothing'),
                       (lambda: calib.evaluate(P, Y, metrics=""), 'metrics "": names nothing')]:
        with pytest.raises(ValueError, match=want.replace("(", r"\(").replace(")", r"\)")):
            call()
    assert calib.evaluate(P, Y, logits=np.bool_(False), metrics="brier").value("brier") > 0


def test_torch_loss_options_finite():
    torch = pytest.importorskip("torch")
    from calib.torch import ece_kde_loss
    with pytest.raises(ValueError, match="bandwidth=inf: want a finite number"):
        ece_kde_loss(torch.tensor(P), torch.tensor(Y), bandwidth=float("inf"))


def test_torch_loss_takes_half_precision_probabilities():
    torch = pytest.importorskip("torch")
    from calib.torch import ece_kde_loss
    z = torch.tensor(np.log(P))
    for dt in (torch.float16, torch.bfloat16):
        x = torch.softmax(z.float(), dim=1).to(dt)  # rows off 1 by rounding, as AMP gives them
        x.requires_grad_(True)
        loss = ece_kde_loss(x, torch.tensor(Y), bandwidth=0.1)
        loss.backward()
        ref = ece_kde_loss(x.detach().double() / x.detach().double().sum(1, keepdim=True), torch.tensor(Y), bandwidth=0.1)
        assert abs(float(loss) - float(ref)) <= 1e-2 * abs(float(ref)) and torch.isfinite(x.grad).all()


def test_unread_option_is_refused():
    with pytest.raises(ValueError, match="smece_sigma applies to smece, and none is computed"):
        calib.evaluate(P, Y, metrics="brier", smece_sigma=0.1)
    assert calib.evaluate(P, Y, metrics="smece", smece_sigma=0.1).get("smece", "top_label")["bandwidth"] == 0.1


def test_accumulator_checks_options_as_the_command_line():
    with pytest.raises(ValueError, match='ks_cells "0": want an integer >= 1'):
        calib.Accumulator(ks_cells=0)
    with pytest.raises(ValueError, match="smece_sigma applies to smece, and none is computed"):
        calib.Accumulator(metrics="brier", smece_sigma=0.1)


# Every keyword of every call, from the Go registry (each command's options,
# those that some choices only read), with values that no option takes.
HOSTILE = [("nan", float("nan")), ("inf", float("inf")), ("-inf", -float("inf")), ("empty list", []),
           ("dict", {"a": 1}), ("object", object()), ("array", np.array([1.0, 2.0]))]


def _calls():
    """(command, keyword, call(**kw)) for every keyword a caller can give:
    evaluate's and Calibrator's options (any option of eval or fit),
    test's and bandwidth's named keywords."""
    import inspect
    reg = calib._native.backend().registry()
    out = []
    for k in sorted(reg["options"]["eval"]):
        if k in ("stream", "rows", "eval-points", "ks-cells", "max-cells"):
            continue  # refused for arrays in memory: test_hostile's "stream option"
        out.append(("eval", k.replace("-", "_"), lambda **kw: calib.evaluate(P, Y, **kw)))
    for k in sorted(reg["options"]["fit"]):
        if k == "method":
            continue  # Calibrator's own parameter
        out.append(("fit", k.replace("-", "_"), lambda **kw: calib.Calibrator("isotonic", options=kw).fit(P, Y)))
    for name, f in (("test", calib.test), ("bandwidth", calib.bandwidth)):
        for k in inspect.signature(f).parameters:
            if k not in ("probs", "labels", "weights"):
                out.append((name, k, lambda f=f, **kw: f(P, Y, **kw)))
    return out


def test_every_keyword_refuses_hostile_values():
    """NaN, infinities, an empty list and values of no option's type, given
    to any keyword of any call, raise ValueError naming the keyword as the
    caller spelled it (no flag syntax), never CalibError or a result."""
    n = 0
    for command, key, call in _calls():
        for what, v in HOSTILE:
            n += 1
            try:
                call(**{key: v})
            except ValueError as e:
                msg = str(e)
                assert key in msg and "--" not in msg, f"{command} {key}={what}: {msg}"
                continue
            except Exception as e:  # noqa: BLE001: the class is what is asserted
                pytest.fail(f"{command} {key}={what}: {type(e).__name__}: {e}")
            pytest.fail(f"{command} {key}={what}: accepted")
    assert n > 300


def test_every_option_that_only_some_choices_read_is_refused_without_them():
    """An option given at its default while none of what reads it is chosen
    (a metric, a method, a test) is refused, naming the keyword."""
    from calib.calibrator import LOGIT_METHODS
    reg = calib._native.backend().registry()
    opts = reg["options"]
    chosen = {"eval": ("metrics", "brier"), "test": ("tests", "skce"), "bandwidth": ("objective", "reference")}
    for command, readers in reg["readers"].items():
        for flag in sorted(readers):
            if flag in ("eval-points", "ks-cells", "max-cells"):
                continue  # a stream's: refused in memory (test_hostile's "stream option"), read by Accumulator
            key, default = flag.replace("-", "_"), opts[command][flag]["default"]
            kind = opts[command][flag]["type"]
            v = True if kind == "bool" else int(default) + 1 if kind == "int" else float(default) + 0.5 if kind == "float64" else default or {"scalar-mode": "top_label"}[flag]
            if command == "fit":
                method = next(m for m in calib.METHODS if m not in readers[flag])
                call = lambda: calib.Calibrator(method, logits=method in LOGIT_METHODS, options={key: v}).fit(np.log(P) if method in LOGIT_METHODS else P, Y)
            elif command == "test":
                call = lambda: calib.test(P, Y, tests=chosen["test"][1], **{key: v})
            elif command == "bandwidth":
                call = lambda: calib.bandwidth(P, Y, objective=chosen["bandwidth"][1], **{key: v})
            else:
                call = lambda: calib.evaluate(P, Y, metrics=chosen["eval"][1], **{key: v})
            with pytest.raises(ValueError) as e:
                call()
            assert key in str(e.value) and "applies to" in str(e.value) and "--" not in str(e.value), (command, key, str(e.value))


def test_one_number_functions_refuse_what_they_set():
    """The one-number functions set metrics (and ks_error r, smece and
    ece_variational the notion) themselves: given, ValueError names the
    keyword, never a TypeError or another entry's number."""
    for call, want in [(lambda: calib.ece_kde(P, Y, metrics="brier"), "metrics: ece_kde sets it itself"),
                       (lambda: calib.ece_binned(P, Y, metrics="brier"), "metrics: ece_binned sets it itself"),
                       (lambda: calib.ece_variational(P, Y, metrics="brier"), "metrics: ece_variational sets it itself"),
                       (lambda: calib.ks_error(P, Y, ks_r=[2]), "ks_r: ks_error sets it itself"),
                       (lambda: calib.smece(P, Y, mode="class_wise"), "mode: smece sets it itself")]:
        with pytest.raises(ValueError, match=want):
            call()
    top = calib.evaluate(P, Y, metrics="ks").get("ks", "top_r", r=1)["value"]
    assert calib.ks_error(P, Y) == top


def test_calibrator_options_cannot_override_its_parameters():
    """logits in Calibrator's options would fit on softmax(X) and apply to
    X as probabilities: refused, as is a non-dict."""
    with pytest.raises(ValueError, match="logits is a parameter of Calibrator"):
        calib.Calibrator("platt", options={"logits": True}).fit(P, Y)
    with pytest.raises(ValueError, match="want a dict"):
        calib.Calibrator("spline", options="knots=5").fit(P, Y)
