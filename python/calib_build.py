"""calib's build backend (PEP 517): builds the Go library
(cmd/calib/libcalib, -buildmode=c-shared) with the local Go toolchain and
writes the wheel itself, with the standard library alone, so that

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation --no-index ./python

works with any Python 3.9+ and its own pip, with or without setuptools and
the wheel package (setuptools before 70.1 without wheel stops with
"invalid command 'bdist_wheel'"). The package itself needs numpy, which pip
installs or, offline, names as the one thing missing.

The wheel is tagged py3-none-PLATFORM: the library is loaded with ctypes,
so any CPython 3 on that platform takes it. Environment:
CALIB_LIBRARY_PREBUILT=path puts that libcalib.so in the wheel instead of
building one, CALIB_WHEEL_PLATFORM its platform tag (linux_aarch64; for the
cross builds of scripts/python-wheels.sh); GO (default "go"), GOARCH, CC
and CGO_ENABLED are passed to go build.
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sysconfig
import tempfile
import zipfile

HERE = os.path.dirname(os.path.realpath(__file__))
ROOT = os.path.dirname(HERE)  # the Go module: python/ lives in its root

__all__ = ["build_wheel", "prepare_metadata_for_build_wheel", "get_requires_for_build_wheel", "build_sdist", "get_requires_for_build_sdist"]


def _project():
    """The [project] table of pyproject.toml: the strings name, version,
    description, requires-python and the lists dependencies and, by extra,
    optional-dependencies. Read by tomllib where Python has it (3.11+),
    else by the few rules this file's table follows (one key a line,
    double-quoted strings, one-line lists)."""
    text = open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8").read()
    try:
        import tomllib
    except ImportError:
        tomllib = None
    if tomllib is not None:
        doc = tomllib.loads(text)
        return doc["project"]
    project, table = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[([^\]]+)\]", line)
        if m:
            table = m.group(1)
            continue
        m = re.fullmatch(r'([A-Za-z0-9_-]+)\s*=\s*(.+)', line)
        if not m or table not in ("project", "project.optional-dependencies"):
            continue
        key, value = m.group(1), m.group(2)
        if value.startswith("["):
            value = re.findall(r'"([^"]*)"', value)
        elif value.startswith('"'):
            value = value[1:value.index('"', 1)]
        else:
            continue  # a table such as license = {...}: not needed here
        if table == "project":
            project[key] = value
        else:
            project.setdefault("optional-dependencies", {})[key] = value
    return project


def _metadata(project):
    """The METADATA file (core metadata 2.1) of the project."""
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if project.get("description"):
        lines.append(f"Summary: {project['description']}")
    if project.get("requires-python"):
        lines.append(f"Requires-Python: {project['requires-python']}")
    for dep in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {dep}")
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        for dep in deps:
            lines.append(f'Requires-Dist: {dep}; extra == "{extra}"')
    readme = os.path.join(HERE, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        body = "\n" + open(readme, encoding="utf-8").read()
    return "\n".join(lines) + "\n" + body


def _platform():
    return os.environ.get("CALIB_WHEEL_PLATFORM") or sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _dist_info(project):
    return f"{project['name']}-{project['version']}.dist-info"


def _wheel_file(platform):
    return f"Wheel-Version: 1.0\nGenerator: calib_build\nRoot-Is-Purelib: false\nTag: py3-none-{platform}\n"


def _library(out):
    """Build libcalib.so into out (or copy CALIB_LIBRARY_PREBUILT);
    errors are one line naming what is missing."""
    prebuilt = os.environ.get("CALIB_LIBRARY_PREBUILT")
    if prebuilt:
        shutil.copyfile(prebuilt, out)
        return
    if not os.path.exists(os.path.join(ROOT, "go.mod")):
        raise SystemExit(f"calib: {ROOT} holds no go.mod: build the package from a checkout of the calib repository (python/ inside it), or set CALIB_LIBRARY_PREBUILT")
    go = os.environ.get("GO", "go")
    if shutil.which(go) is None:
        raise SystemExit(f"calib: building the Go library needs Go ({go!r} is not on PATH); install Go 1.26+, or install a binary wheel (scripts/python-wheels.sh)")
    env = dict(os.environ, CGO_ENABLED=os.environ.get("CGO_ENABLED", "1"))
    cmd = [go, "build", "-trimpath", "-buildmode=c-shared", "-ldflags=-s -w", "-o", out, "./cmd/calib/libcalib"]
    print("calib: " + " ".join(cmd), flush=True)
    code = subprocess.call(cmd, cwd=ROOT, env=env)
    if code != 0:
        raise SystemExit(f"calib: go build of the library failed (exit {code}; its messages are above)")
    header = os.path.splitext(out)[0] + ".h"
    if os.path.exists(header):
        os.remove(header)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Build the wheel into wheel_directory and return its file name."""
    project = _project()
    platform = _platform()
    name = f"{project['name']}-{project['version']}-py3-none-{platform}.whl"
    dist_info = _dist_info(project)
    files = []  # (name in the wheel, bytes)
    pkg = os.path.join(HERE, "calib")
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py"):
            with open(os.path.join(pkg, f), "rb") as fh:
                files.append((f"calib/{f}", fh.read()))
    with tempfile.TemporaryDirectory() as tmp:
        lib = os.path.join(tmp, "libcalib.so")
        _library(lib)
        with open(lib, "rb") as fh:
            files.append(("calib/_lib/libcalib.so", fh.read()))
    files.append((f"{dist_info}/METADATA", _metadata(project).encode()))
    files.append((f"{dist_info}/WHEEL", _wheel_file(platform).encode()))
    files.append((f"{dist_info}/top_level.txt", b"calib\n"))
    record = [_record_line(n, d) for n, d in files] + [f"{dist_info}/RECORD,,"]
    files.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    os.makedirs(wheel_directory, exist_ok=True)
    path = os.path.join(wheel_directory, name)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            info = zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if n.endswith(".so") else 0o644) << 16
            z.writestr(info, d)
    return name


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    """Write the .dist-info directory (METADATA, WHEEL) without building
    the Go library; return its name."""
    project = _project()
    dist_info = _dist_info(project)
    d = os.path.join(metadata_directory, dist_info)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(project))
    with open(os.path.join(d, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_file(_platform()))
    return dist_info


def get_requires_for_build_wheel(config_settings=None):
    """Nothing: the backend uses the standard library and Go."""
    return []


def get_requires_for_build_sdist(config_settings=None):
    """Nothing, as for the wheel."""
    return []


def build_sdist(sdist_directory, config_settings=None):
    """No source distribution: the package builds from a checkout of the
    repository (the Go module is its parent directory)."""
    raise SystemExit("calib: no source distribution: build the wheel from a checkout of the repository (pip install ./python), or build binary wheels with scripts/python-wheels.sh")
