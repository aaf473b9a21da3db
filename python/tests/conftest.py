"""Fixtures: the calib command line (built from this checkout, or
$CALIB_CLI), the real sets of testdata/realsets, and a runner that returns
the CLI's JSON."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REALSETS = os.path.join(ROOT, "testdata", "realsets")
GOLDEN = os.path.join(ROOT, "testdata", "golden", "ecekde")


def pytest_report_header(config):
    import calib

    return f"calib package: {calib.__file__}"


@pytest.fixture(scope="session")
def cli(tmp_path_factory):
    """The path of a calib binary built from this checkout."""
    if os.environ.get("CALIB_CLI"):
        return os.environ["CALIB_CLI"]
    out = str(tmp_path_factory.mktemp("cli") / "calib")
    subprocess.check_call(["go", "build", "-o", out, "./cmd/calib"], cwd=ROOT)
    return out


def realsets():
    """The 12 real sets: (name, logits path, labels path)."""
    out = []
    for name in sorted(os.listdir(REALSETS)):
        d = os.path.join(REALSETS, name)
        if os.path.isdir(d):
            out.append((name, os.path.join(d, "logits.npy"), os.path.join(d, "labels.npy")))
    return out


def strip_run(doc):
    """The JSON without what differs from run to run or names the input:
    seconds, provenance, file names."""
    if isinstance(doc, dict):
        return {k: strip_run(v) for k, v in doc.items() if k not in ("seconds", "provenance", "file")}
    if isinstance(doc, list):
        return [strip_run(v) for v in doc]
    return doc


def run_cli(cli, *args, check=True):
    """Run the CLI; returns (exit code, stdout, stderr)."""
    p = subprocess.run([cli, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"calib {' '.join(args)}: exit {p.returncode}: {p.stderr}")
    return p.returncode, p.stdout, p.stderr


def run_python(code, env=None, timeout=60):
    """Run code in a fresh interpreter (the runtime-rule tests); returns the
    CompletedProcess."""
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=timeout)


@pytest.fixture(scope="session")
def densenet():
    """CIFAR-10 DenseNet-121 (focal loss) validation logits and labels."""
    d = os.path.join(REALSETS, "cifar10_densenet121-flsd53")
    return np.load(os.path.join(d, "logits.npy")), np.load(os.path.join(d, "labels.npy"))
