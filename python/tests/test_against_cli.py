"""Every function against the calib command line's JSON on the 12 real sets
of testdata/realsets (CIFAR-10 and CIFAR-100 validation logits of 12
networks): the same numbers bit for bit (JSON compared after parsing, with
seconds, provenance and file names removed)."""

import json

import numpy as np
import pytest

import calib
from conftest import realsets, run_cli, strip_run

SETS = realsets()


def test_twelve_sets():
    assert len(SETS) == 12


@pytest.mark.parametrize("name,logits,labels", SETS, ids=[s[0] for s in SETS])
def test_evaluate_matches_cli(cli, name, logits, labels):
    z, y = np.load(logits), np.load(labels)
    _, out, _ = run_cli(cli, "eval", logits, "--labels", labels, "--logits", "--json")
    ev = calib.evaluate(z, y, logits=True)
    doc = json.loads(out)
    assert strip_run(ev.to_dict()) == strip_run(doc)
    assert len(ev) >= 10
    # The default leads with the number to report, named by the document.
    assert ev.results[0] is ev.headline
    assert ev.headline["metric"] == doc["headline"]["metric"] == "ece_variational"
    assert ev.headline["notion"] == "canonical" and ev.headline["p"] == 1 and len(ev.headline["interval"]) == 2
    assert ev.paper_number["metric"] == "ece_bin" and ev.paper_number["notion"] == "top_label"


@pytest.mark.parametrize("name,logits,labels", SETS, ids=[s[0] for s in SETS])
def test_test_and_bandwidth_match_cli(cli, name, logits, labels):
    z, y = np.load(logits), np.load(labels)
    _, out, _ = run_cli(cli, "test", logits, "--labels", labels, "--logits", "--json")
    assert strip_run(calib.test(z, y, logits=True)) == strip_run(json.loads(out))
    _, out, _ = run_cli(cli, "bandwidth", logits, "--labels", labels, "--logits", "--json")
    assert strip_run(calib.bandwidth(z, y, logits=True)) == strip_run(json.loads(out))


def _cli_entry(cli, logits, labels, *flags):
    _, out, _ = run_cli(cli, "eval", logits, "--labels", labels, "--logits", "--json", *flags)
    return json.loads(out)["results"]


@pytest.mark.parametrize("name,logits,labels", SETS, ids=[s[0] for s in SETS])
def test_one_liners_match_cli(cli, name, logits, labels):
    z, y = np.load(logits), np.load(labels)
    r = _cli_entry(cli, logits, labels, "--metrics", "ece_bin", "--p", "1", "--bins", "15")
    assert calib.ece_binned(z, y, logits=True) == next(e for e in r if e["notion"] == "top_label")["value"]
    r = _cli_entry(cli, logits, labels, "--metrics", "ks")
    assert calib.ks_error(z, y, logits=True) == next(e for e in r if e["notion"] == "top_r" and e["r"] == 1)["value"]
    r = _cli_entry(cli, logits, labels, "--metrics", "ece_witness", "--p", "1")
    assert calib.ece_witness(z, y, logits=True) == r[0]["value"]
    r = _cli_entry(cli, logits, labels, "--metrics", "smece")
    assert calib.smece(z, y, logits=True) == next(e for e in r if e["notion"] == "top_label")["value"]
    r = _cli_entry(cli, logits, labels, "--metrics", "ece_kde", "--mode", "top_label", "--p", "2")
    assert calib.ece_kde(z, y, mode="top_label", p=2, logits=True) == r[0]["value"]


def test_options_match_cli_flags(cli, densenet):
    """Options are the CLI's flags: lists, numbers, booleans, conventions."""
    z, y = densenet
    from conftest import REALSETS
    import os

    d = os.path.join(REALSETS, "cifar10_densenet121-flsd53")
    flags = ["--metrics", "ece_bin,mce,ace,brier", "--p", "1,2", "--bins", "20", "--convention", "sklearn", "--ci", "--ci-resamples", "50", "--seed", "7"]
    _, out, _ = run_cli(cli, "eval", d + "/logits.npy", "--labels", d + "/labels.npy", "--logits", "--json", *flags)
    ev = calib.evaluate(z, y, logits=True, metrics=["ece_bin", "mce", "ace", "brier"], p=[1, 2], bins=20, convention="sklearn", ci=True, ci_resamples=50, seed=7)
    assert strip_run(ev.to_dict()) == strip_run(json.loads(out))


def test_weights_match_cli(cli, densenet, tmp_path):
    z, y = densenet
    w = np.random.default_rng(3).uniform(0.1, 2.0, size=len(y))
    np.save(tmp_path / "z.npy", z)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "w.npy", w)
    _, out, _ = run_cli(cli, "eval", str(tmp_path / "z.npy"), "--labels", str(tmp_path / "y.npy"), "--weights", str(tmp_path / "w.npy"), "--logits", "--json")
    assert strip_run(calib.evaluate(z, y, logits=True, weights=w).to_dict()) == strip_run(json.loads(out))


def test_probabilities_and_float32(cli, densenet, tmp_path):
    """Probabilities in float64 and float32 give what the CLI gives on the
    same arrays saved as .npy."""
    z, y = densenet
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    for dt in (np.float64, np.float32):
        q = p.astype(dt)
        if dt == np.float32:
            q = q.astype(np.float64)
            q /= q.sum(axis=1, keepdims=True)
            q = q.astype(np.float32)
        np.save(tmp_path / "p.npy", q)
        np.save(tmp_path / "y.npy", y)
        _, out, _ = run_cli(cli, "eval", str(tmp_path / "p.npy"), "--labels", str(tmp_path / "y.npy"), "--json", "--tolerance", "1e-4")
        ev = calib.evaluate(q, y, tolerance=1e-4)
        assert strip_run(ev.to_dict()) == strip_run(json.loads(out))


def test_evaluation_object(densenet):
    z, y = densenet
    ev = calib.evaluate(z, y, logits=True)
    assert ev.n == len(y) and ev.k == 10
    assert ev["ece_variational"]["metric"] == "ece_variational"
    assert ev.ece_variational.value == ev.value("ece_variational", "canonical", 1) == ev.headline.value
    assert ev.paper_number.value == ev.value("ece_bin", "top_label", 1)
    assert ev.get("ece_bin", "top_label", p=2)["p"] == 2
    assert ev.get("nonesuch") is None
    with pytest.raises(AttributeError):
        ev.nonesuch
    assert json.loads(ev.to_json()) == ev.to_dict()
    pd = pytest.importorskip("pandas")
    df = ev.to_pandas()
    assert len(df) == len(ev) and "value" in df.columns


@pytest.mark.parametrize("name,logits,labels", SETS, ids=[s[0] for s in SETS])
def test_maps_and_accumulator_match_cli(cli, tmp_path, name, logits, labels):
    """On every set: a temperature map fitted on the first half (Python)
    applies with calib apply to the second half, bit for bit, and is the
    map calib fit writes; the Accumulator fed the rows in batches of 500
    equals calib eval --stream --rows 500."""
    z, y = np.load(logits), np.load(labels)
    half = len(y) // 2
    np.save(tmp_path / "val.npy", z[:half])
    np.save(tmp_path / "val_y.npy", y[:half])
    np.save(tmp_path / "test.npy", z[half:])
    cal = calib.Calibrator("temperature", logits=True).fit(z[:half], y[:half])
    cal.save(tmp_path / "py.json")
    run_cli(cli, "apply", str(tmp_path / "py.json"), str(tmp_path / "test.npy"), "--logits", "-o", str(tmp_path / "out.npy"))
    assert np.array_equal(cal.predict_proba(z[half:]), np.load(tmp_path / "out.npy"))
    _, out, _ = run_cli(cli, "fit", str(tmp_path / "val.npy"), "--labels", str(tmp_path / "val_y.npy"), "--logits", "--method", "temperature", "-o", "-")
    a, b = json.loads(out), json.loads(cal.map_)
    a.pop("provenance"), b.pop("provenance")
    assert a == b
    _, out, _ = run_cli(cli, "eval", logits, "--labels", labels, "--logits", "--stream", "--rows", "500", "--json", "--metrics", calib.Accumulator.ONE_PASS_METRICS)
    acc = calib.Accumulator(logits=True, metrics=calib.Accumulator.ONE_PASS_METRICS)
    for i in range(0, len(y), 500):
        acc.add(z[i:i + 500], y[i:i + 500])
    assert strip_run(acc.finish().to_dict()) == strip_run(json.loads(out))


@pytest.mark.parametrize("name,logits,labels", [SETS[0], SETS[5]], ids=[SETS[0][0], SETS[5][0]])
def test_ece_variational_matches_cli(cli, name, logits, labels):
    """The variational one-liner (its entry: value, interval, family) on a
    CIFAR-100 and a CIFAR-10 set."""
    z, y = np.load(logits), np.load(labels)
    r = _cli_entry(cli, logits, labels, "--metrics", "ece_variational")
    want = next(e for e in r if e["notion"] == "canonical")
    got = dict(calib.ece_variational(z, y, logits=True))
    want.pop("seconds", None), got.pop("seconds", None)
    assert got == want and got["value"] > 0 and len(got["interval"]) == 2
