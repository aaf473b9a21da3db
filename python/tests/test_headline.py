"""The number to report (the headline: ece_variational canonical p=1, lp)
on the demo set (the CIFAR-10 test split that calib demo embeds, 10,000
rows) has one interval, its estimator's cross-fit interval, and the Python
package gives the numbers calib eval, calib demo and calib eval --stream
give: calib.evaluate is calib eval --json bit for bit (ci=True adds no
bootstrap interval beside it), calib demo prints its digits, and
calib.Accumulator is calib eval --stream (every fold's sample holds all its
rows at this n: the in-memory numbers up to the order of the sums, 1e-12).
No number is written here: the estimator may change, the front ends must
agree (cmd/calib/internal/cli/headline_test.go checks the Go front ends
against evaluate.Evaluate, beam/cmd/calib-beam/headline_test.go calib-beam)."""

import json
import os

import numpy as np

import calib
from conftest import ROOT, run_cli

DEMO = os.path.join(ROOT, "cmd", "calib", "internal", "demo", "cifar10_resnet110-brier")
LOGITS, LABELS = os.path.join(DEMO, "test_logits.npy"), os.path.join(DEMO, "test_labels.npy")


def numbers(e):
    """The headline entry's value and interval, checking it has its
    estimator's interval alone."""
    assert e is not None
    assert e["metric"] == "ece_variational" and e["notion"] == "canonical" and e["p"] == 1 and e["loss"] == "lp"
    assert e["interval_kind"] == "cross-fit" and e["interval_level"] == 0.95
    assert not any(k.startswith("ci") for k in e), f"a bootstrap interval beside the estimator's: {dict(e)}"
    assert [e.lo, e.hi] == e["interval"]
    return e["value"], e["interval"][0], e["interval"][1]


def cli_headline(cli, *args):
    _, out, _ = run_cli(cli, *args)
    doc = json.loads(out)
    ref = doc["headline"]
    return next(calib.Entry(e) for e in doc["results"] if all(e.get(k) == v for k, v in ref.items()))


def test_headline_same_as_cli(cli, tmp_path):
    z, y = np.load(LOGITS), np.load(LABELS)
    ev = calib.evaluate(z, y, logits=True)
    mine = numbers(ev.headline)
    assert mine[1] < mine[0] < mine[2]
    # calib eval --json, bit for bit.
    assert numbers(cli_headline(cli, "eval", LOGITS, "--labels", LABELS, "--logits", "--json")) == mine
    # ci=True: a bootstrap interval for the metrics without their own, none
    # beside the headline's.
    ci = calib.evaluate(z, y, logits=True, metrics="ece_variational,brier", ci=True, ci_resamples=20)
    assert numbers(ci.headline) == mine
    brier = ci.get("brier")
    assert "interval" not in brier and [brier.lo, brier.hi] == brier["ci"]
    # calib demo prints the same digits.
    _, out, _ = run_cli(cli, "demo", "--methods", "temperature", "--ci=false", "--progress=false", "-o", str(tmp_path / "demo.html"))
    want = "  canonical CE_1 (report this)           %.4f  [%.4f, %.4f]\n" % mine
    assert want in out, out
    # calib eval prints them in its note.
    _, out, _ = run_cli(cli, "eval", LOGITS, "--labels", LABELS, "--logits", "--progress=false")
    assert ("report: ece_variational canonical p=1 (lp) = %.4f [%.4f, %.4f]" % mine) in out, out


def test_accumulator_headline_same_as_stream(cli):
    z, y = np.load(LOGITS), np.load(LABELS)
    mem = numbers(calib.evaluate(z, y, logits=True).headline)
    stream = numbers(cli_headline(cli, "eval", LOGITS, "--labels", LABELS, "--logits", "--stream", "--json"))
    acc = calib.Accumulator(logits=True)
    assert acc.passes == 2
    for _ in range(2):
        for i in range(0, len(y), 2500):
            acc.add(z[i:i + 2500], y[i:i + 2500])
        if acc.current_pass == 1:
            acc.second_pass()
    got = numbers(acc.finish().headline)
    for g, s, m in zip(got, stream, mem):
        assert abs(g - s) <= 1e-12 * abs(s), (got, stream)
        assert abs(g - m) <= 1e-12 * abs(m), (got, mem)


def test_entry_one_interval():
    # The estimator's own before a bootstrap's (a document from before the
    # rule could hold both), none for an exact one (width 0) or none at all.
    assert (calib.Entry(interval=[1, 2], interval_kind="cross-fit", ci=[3, 4]).lo, calib.Entry(interval=[1, 2], ci=[3, 4]).hi) == (1, 2)
    assert (calib.Entry(ci=[3, 4]).lo, calib.Entry(ci=[3, 4]).hi) == (3, 4)
    assert calib.Entry(value=1, interval=[1, 1], interval_kind="exact").lo is None
    assert calib.Entry(value=1).hi is None
