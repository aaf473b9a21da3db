"""The README's install line, run as written with a Python other than
Debian's first on the PATH (pyenv's, say: its own pip and setuptools, no
wheel package): it installs, or stops naming the one thing missing (numpy,
offline), never with "invalid command 'bdist_wheel'". The Python is
$CALIB_OTHER_PYTHON, or each Python 3.9+ of ~/.pyenv/versions (here
3.9.18 to 3.13.0: setuptools 58 to 65 without wheel, or no setuptools at
all); the test is skipped where there is none."""

import glob
import os
import shutil
import subprocess

import pytest

from conftest import ROOT

LINE = "python3 -m venv --system-site-packages .venv && .venv/bin/pip install --no-build-isolation --no-index ./python"


def other_pythons():
    """$CALIB_OTHER_PYTHON, or every pyenv Python 3."""
    p = os.environ.get("CALIB_OTHER_PYTHON")
    if p:
        return [p]
    found = glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3"))
    minor = lambda p: int(p.split("/versions/3.")[1].split(".")[0])
    return sorted((p for p in found if minor(p) >= 9), key=minor)  # requires-python >= 3.9


def install(tmp_path, python, numpy_from=None):
    """Run LINE in tmp_path (python/ a link to this checkout's) with
    python's directory first on the PATH; numpy_from: a directory added to
    the new environment's path (numpy alone). Returns (exit status,
    output, the environment's python)."""
    os.symlink(os.path.join(ROOT, "python"), tmp_path / "python")
    env = dict(os.environ, PATH=os.path.dirname(python) + os.pathsep + os.environ["PATH"])
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    venv, pip = LINE.split(" && ")
    out = subprocess.run(venv, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    envpy = str(tmp_path / ".venv" / "bin" / "python")
    if numpy_from:
        site = subprocess.check_output([envpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip()
        with open(os.path.join(site, "numpy-only.pth"), "w") as f:
            f.write(numpy_from + "\n")
    out = subprocess.run(pip, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr, envpy


@pytest.mark.parametrize("python", other_pythons() or [None])
def test_readme_install_line_with_another_python(tmp_path, python):
    if python is None or os.path.realpath(python).startswith("/usr/bin/"):
        pytest.skip("no Python other than Debian's (set CALIB_OTHER_PYTHON)")
    if shutil.which("go") is None:
        pytest.skip("no Go on the PATH")
    has = lambda mod: subprocess.run([python, "-c", f"import {mod}"], capture_output=True).returncode == 0
    (tmp_path / "a").mkdir()
    code, out, envpy = install(tmp_path / "a", python)
    assert "bdist_wheel" not in out, out
    if has("numpy"):
        assert code == 0, out
    else:
        # Offline, the one thing missing is named.
        assert code != 0 and "No matching distribution found for numpy" in out, out
        # With numpy in the environment (Debian's, where its Python has the
        # same version: a compatible build), the same line installs.
        debian = "/usr/lib/python3/dist-packages"
        version = "import sys; print(sys.version_info[:2])"
        same = os.path.exists("/usr/bin/python3") and \
            subprocess.check_output([python, "-c", version], text=True) == subprocess.check_output(["/usr/bin/python3", "-c", version], text=True)
        if not (same and os.path.isdir(os.path.join(debian, "numpy"))):
            return
        only = tmp_path / "numpy-only"
        only.mkdir()
        for p in glob.glob(os.path.join(debian, "numpy")) + glob.glob(os.path.join(debian, "numpy-*")):
            os.symlink(p, only / os.path.basename(p))
        (tmp_path / "b").mkdir()
        code, out, envpy = install(tmp_path / "b", python, numpy_from=str(only))
        assert code == 0 and "bdist_wheel" not in out, out
    run = subprocess.run([envpy, "-c", "import numpy as np, calib; z = np.random.default_rng(0).normal(size=(300, 3)); "
                          "y = np.arange(300) % 3; print(calib.evaluate(z, y, logits=True, metrics='brier').value('brier'))"],
                         cwd=str(tmp_path), capture_output=True, text=True)
    assert run.returncode == 0 and float(run.stdout) > 0, run.stdout + run.stderr
