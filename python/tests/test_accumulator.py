"""calib.Accumulator against calib eval --stream: the same JSON for the same
rows (in batches of any size, merged or pickled), and its refusals."""

import json
import os
import pickle

import numpy as np
import pytest

import calib
from conftest import REALSETS, run_cli, strip_run

D = os.path.join(REALSETS, "cifar100_resnet110-brier")


def data():
    return np.load(os.path.join(D, "logits.npy")), np.load(os.path.join(D, "labels.npy"))


def cli_stream(cli, *flags):
    _, out, _ = run_cli(cli, "eval", os.path.join(D, "logits.npy"), "--labels", os.path.join(D, "labels.npy"), "--logits", "--stream", "--rows", "300", "--json", *flags)
    return strip_run(json.loads(out))


def test_batches_match_cli_stream(cli):
    z, y = data()
    want = cli_stream(cli, "--metrics", calib.Accumulator.ONE_PASS_METRICS)
    acc = calib.Accumulator(logits=True, metrics=calib.Accumulator.ONE_PASS_METRICS)
    assert acc.passes == 1
    for i in range(0, len(y), 300):
        acc.add(z[i:i + 300], y[i:i + 300])
    assert strip_run(acc.finish().to_dict()) == want
    # Other batch sizes: the same sums but for the last bits of the
    # order-dependent float sums.
    acc = calib.Accumulator(logits=True, metrics=calib.Accumulator.ONE_PASS_METRICS)
    for i in range(0, len(y), 777):
        acc.add(z[i:i + 777], y[i:i + 777])
    got = acc.finish()
    for e, w in zip(got.results, want["results"]):
        assert e["metric"] == w["metric"] and abs(e["value"] - w["value"]) <= 1e-12 * max(1, abs(w["value"]))


def test_options_and_weights_match_cli(cli, tmp_path):
    z, y = data()
    w = np.random.default_rng(4).uniform(0.5, 2, size=len(y))
    np.save(tmp_path / "w.npy", w)
    want = cli_stream(cli, "--metrics", "ece_bin,mce,ks,nll", "--bins", "10", "--p", "1,2", "--weights", str(tmp_path / "w.npy"))
    acc = calib.Accumulator(logits=True, metrics="ece_bin,mce,ks,nll", bins=10, p=[1, 2])
    for i in range(0, len(y), 300):
        acc.add(z[i:i + 300], y[i:i + 300], weights=w[i:i + 300])
    assert strip_run(acc.finish().to_dict()) == want


def test_merge_and_pickle():
    z, y = data()
    one = calib.Accumulator.ONE_PASS_METRICS
    whole = calib.Accumulator(logits=True, metrics=one)
    whole.add(z, y)
    a, b = calib.Accumulator(logits=True, metrics=one), calib.Accumulator(logits=True, metrics=one)
    a.add(z[:1000], y[:1000])
    b.add(z[1000:], y[1000:])
    b2 = pickle.loads(pickle.dumps(b))  # as a data loader's worker would send it
    assert a.merge(b2) == len(y)
    got, want = a.finish(), whole.finish()
    for e, w in zip(got.results, want.results):
        assert e["metric"] == w["metric"] and abs(e["value"] - w["value"]) <= 1e-12 * max(1, abs(w["value"]))
    with pytest.raises(ValueError, match="itself"):
        a.merge(a)
    other = calib.Accumulator(logits=True, metrics="brier")
    other.add(z[:5], y[:5])
    with pytest.raises(ValueError, match="different options"):
        a.merge(other)


def test_refusals():
    z, y = data()
    assert calib.Accumulator(metrics="ece_kde").passes == 2
    with pytest.raises(ValueError, match="does not apply to batches"):
        calib.Accumulator(rows=10)
    with pytest.raises(ValueError, match="unknown option: nonesuch"):
        calib.Accumulator(nonesuch=1)
    acc = calib.Accumulator(logits=True)
    with pytest.raises(ValueError, match="no samples"):
        acc.finish()
    acc.add(z[:10], y[:10])
    with pytest.raises(ValueError, match=r"rows 11 to 12 of the stream\): row 2, column 1: not a finite"):
        bad = z[10:12].astype(np.float64)
        bad[1, 0] = np.nan
        acc.add(bad, y[10:12])
    with pytest.raises(ValueError, match="10 columns of logits, where the stream began with 100"):
        acc.add(z[:5, :10], y[:5] % 10)
    assert acc.add(z[10:20], y[10:20]) == 20


def test_merge_across_processes(tmp_path):
    """Accumulators filled in two other processes (a data loader's workers)
    pickle and merge into the one a whole-set accumulator gives."""
    from conftest import run_python

    z, y = data()
    code = f"""
import pickle, sys, numpy as np, calib
z = np.load({os.path.join(D, 'logits.npy')!r}); y = np.load({os.path.join(D, 'labels.npy')!r})
i, j = int(sys.argv[1]), int(sys.argv[2])
acc = calib.Accumulator(logits=True, metrics=calib.Accumulator.ONE_PASS_METRICS)
acc.add(z[i:j], y[i:j])
open(sys.argv[3], "wb").write(pickle.dumps(acc))
"""
    import subprocess
    import sys

    parts = []
    for k, (i, j) in enumerate([(0, 700), (700, len(y))]):
        out = tmp_path / f"part{k}.pkl"
        subprocess.run([sys.executable, "-c", code, str(i), str(j), str(out)], check=True)
        parts.append(pickle.loads(out.read_bytes()))
    assert parts[0].merge(parts[1]) == len(y)
    whole = calib.Accumulator(logits=True, metrics=calib.Accumulator.ONE_PASS_METRICS)
    whole.add(z, y)
    for e, w in zip(parts[0].finish().results, whole.finish().results):
        assert abs(e["value"] - w["value"]) <= 1e-12 * max(1, abs(w["value"]))


def test_accumulator_after_fork_is_refused():
    from conftest import run_python

    out = run_python(f"""
import os, numpy as np, calib
z = np.load({os.path.join(D, 'logits.npy')!r}); y = np.load({os.path.join(D, 'labels.npy')!r})
acc = calib.Accumulator(logits=True)
acc.add(z[:100], y[:100])
pid = os.fork()
if pid == 0:
    try:
        acc.add(z[100:200], y[100:200]); print("added", flush=True)
    except calib.CalibError as e:
        print("refused:", e, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
print("parent", acc.add(z[100:200], y[100:200]))
""", timeout=60)
    assert out.returncode == 0, out.stderr
    assert "refused: calib: this Accumulator was made in process" in out.stdout and "parent 200" in out.stdout


def test_restarted_worker_invalidates_accumulators():
    from conftest import run_python

    out = run_python(f"""
import numpy as np, calib
z = np.load({os.path.join(D, 'logits.npy')!r}); y = np.load({os.path.join(D, 'labels.npy')!r})
a = calib.Accumulator(logits=True)
a.add(z[:100], y[:100])
b = calib._native.backend()
b.proc.kill(); b.proc.wait()          # the worker dies (as after a Ctrl-C)
c = calib.Accumulator(logits=True, metrics="brier")  # a new worker, handles from 1 again
c.add(z[:10], y[:10])
try:
    a.add(z[100:110], y[100:110]); print("added")
except calib.CalibError as e:
    print("refused:", e)
print("c", c.finish().n)
""", env={"CALIB_BACKEND": "subprocess"}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "refused: calib: the out-of-process backend holding this Accumulator restarted" in out.stdout and "c 10" in out.stdout


def test_two_passes_match_cli_stream(cli):
    """The default metrics (the headline first) in two passes: the JSON of
    calib eval --stream on the same rows; pickled between and within the
    passes, the same."""
    z, y = data()
    want = cli_stream(cli)
    acc = calib.Accumulator(logits=True)
    assert (acc.passes, acc.current_pass) == (2, 1)
    for i in range(0, len(y), 300):
        acc.add(z[i:i + 300], y[i:i + 300])
    with pytest.raises(ValueError, match=r"finish\(\) before the second pass: ece_variational needs a second pass over the rows: call second_pass\(\)"):
        acc.finish()
    acc = pickle.loads(pickle.dumps(acc))
    acc.second_pass()
    assert acc.current_pass == 2
    for i in range(0, len(y), 300):
        acc.add(z[i:i + 300], y[i:i + 300])
        if i == 900:
            acc = pickle.loads(pickle.dumps(acc))
    got = acc.finish()
    assert strip_run(got.to_dict()) == want
    assert got.results[0]["metric"] == "ece_variational" and got.headline["metric"] == "ece_variational"


def test_finish_before_the_second_pass_says_what_to_call():
    """The loop a new user writes (add, then finish) with the default
    metrics: finish() raises a one-line ValueError naming only the metrics
    that need the second pass, what to call, and a metrics= list that
    makes one pass, none of which needs the second; that list, given,
    finishes after one pass."""
    z, y = data()
    acc = calib.Accumulator(logits=True)
    acc.add(z, y)
    with pytest.raises(ValueError) as e:
        acc.finish()
    msg = str(e.value)
    assert "\n" not in msg and "call second_pass(), add the same rows again in the same order, then finish()" in msg, msg
    need = msg.split("finish() before the second pass: ")[1].split(" need")[0].split(",")
    assert need == ["ece_variational"], msg
    one = msg.split('metrics="')[1].split('"')[0]
    assert not set(one.split(",")) & set(need), msg
    acc = calib.Accumulator(logits=True, metrics=one)
    assert acc.passes == 1
    acc.add(z, y)
    ev = acc.finish()
    assert [r["metric"] for r in ev.results if r["metric"] == "ece_variational"] == [] and ev.n == len(y)


def test_second_pass_refusals():
    z, y = data()
    acc = calib.Accumulator(logits=True)
    with pytest.raises(ValueError, match="no rows in the first pass"):
        acc.second_pass()
    acc.add(z[:1000], y[:1000])
    acc.second_pass()
    with pytest.raises(ValueError, match="the second pass has begun"):
        acc.second_pass()
    with pytest.raises(ValueError, match="does not merge"):
        acc.merge(calib.Accumulator(logits=True))
    acc.add(z[:600], y[:600])
    with pytest.raises(ValueError, match="has 600 of the first's 1000 rows"):
        acc.finish()
    with pytest.raises(ValueError, match="would hold 1001 rows, the first holds 1000"):
        acc.add(z[600:1001], y[600:1001])
    # The rows at other places (a loader that reshuffles): refused.
    acc.add(z[999:599:-1], y[999:599:-1])
    with pytest.raises(ValueError, match="not the first pass's 1000"):
        acc.finish()
    # Merged first passes do not make a second.
    a, b = calib.Accumulator(logits=True), calib.Accumulator(logits=True)
    a.add(z[:500], y[:500])
    b.add(z[500:1000], y[500:1000])
    a.merge(b)
    with pytest.raises(ValueError, match="rows of 2 runs or sources"):
        a.second_pass()
    one = calib.Accumulator(logits=True, metrics="brier")
    one.add(z[:10], y[:10])
    with pytest.raises(ValueError, match="make one pass"):
        one.second_pass()


def test_copies_of_an_empty_accumulator_merge():
    """Copies of one pickled empty Accumulator (a data loader's workers)
    number their rows apart, so their states merge."""
    z, y = data()
    one = calib.Accumulator.ONE_PASS_METRICS
    blob = pickle.dumps(calib.Accumulator(logits=True, metrics=one))
    a, b = pickle.loads(blob), pickle.loads(blob)
    a.add(z[:700], y[:700])
    b.add(z[700:], y[700:])
    assert a.merge(b) == len(y)
    whole = calib.Accumulator(logits=True, metrics=one)
    whole.add(z, y)
    for e, w in zip(a.finish().results, whole.finish().results):
        assert abs(e["value"] - w["value"]) <= 1e-12 * max(1, abs(w["value"]))
