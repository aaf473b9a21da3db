"""Builds calib's Go library (cmd/calib/libcalib, -buildmode=c-shared) with
the local Go toolchain into calib/_lib/ as part of building the package, so
that one command installs it:

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation --no-index ./python

Environment: CALIB_LIBRARY_PREBUILT=path installs that libcalib.so instead
of building one (scripts/python-wheels.sh uses it for the cross builds);
GO (default "go"), GOARCH, CC and CGO_ENABLED are passed to go build.
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)  # the Go module: python/ lives in its root


class BuildGo(build_py):
    """build_py that first puts libcalib.so into the build's calib/_lib."""

    def run(self):
        super().run()
        out = os.path.abspath(os.path.join(self.build_lib, "calib", "_lib"))
        os.makedirs(out, exist_ok=True)
        target = os.path.join(out, "libcalib.so")
        prebuilt = os.environ.get("CALIB_LIBRARY_PREBUILT")
        if prebuilt:
            shutil.copyfile(prebuilt, target)
            return
        if not os.path.exists(os.path.join(ROOT, "go.mod")):
            raise SystemExit(f"calib: {ROOT} holds no go.mod: build the package from a checkout of the calib repository (python/ inside it), or set CALIB_LIBRARY_PREBUILT")
        go = os.environ.get("GO", "go")
        if shutil.which(go) is None:
            raise SystemExit(f"calib: building the Go library needs Go ({go!r} is not on PATH); install Go 1.26+, or install a binary wheel (scripts/python-wheels.sh)")
        env = dict(os.environ, CGO_ENABLED=os.environ.get("CGO_ENABLED", "1"))
        cmd = [go, "build", "-trimpath", "-buildmode=c-shared", "-ldflags=-s -w", "-o", target, "./cmd/calib/libcalib"]
        print("calib: " + " ".join(cmd))
        subprocess.check_call(cmd, cwd=ROOT, env=env)
        header = os.path.splitext(target)[0] + ".h"
        if os.path.exists(header):
            os.remove(header)


try:
    from wheel.bdist_wheel import bdist_wheel as _bdist_wheel

    class BdistWheel(_bdist_wheel):
        """Wheels tagged py3-none-PLATFORM: the library is loaded with
        ctypes, so any CPython 3 on that platform takes the wheel; the
        platform is the Go library's (--plat-name for a cross build)."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    CMDCLASS = {"bdist_wheel": BdistWheel}
except ImportError:  # no wheel package: pip builds without it
    CMDCLASS = {}


class BinaryDistribution(Distribution):
    """The package holds a platform-specific shared library."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildGo, **CMDCLASS}, distclass=BinaryDistribution)
