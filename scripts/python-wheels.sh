#!/usr/bin/env bash
# Binary wheels of the Python package for linux-x86_64 and linux-aarch64,
# which install without Go: pip install calib-*-py3-none-linux_x86_64.whl.
#
#   scripts/python-wheels.sh [OUTDIR]     (default dist/)
#
# Each wheel holds the package and libcalib.so built for its architecture:
# x86_64 with the native toolchain, aarch64 by cross-compiling
# (GOARCH=arm64, CC=aarch64-linux-gnu-gcc from Debian's
# gcc-aarch64-linux-gnu). Checks: the x86_64 wheel is installed into a fresh
# virtual environment and the package's tests run against it with Go out of
# PATH; the aarch64 library is driven by a C program (scripts/abi-smoke.c)
# under qemu-aarch64-static and must print the x86_64 library's JSON (timings
# aside; numbers within 1e-9 relative: arm64 fuses multiply-adds); then the
# package's tests run on the aarch64 wheel under qemu-aarch64-static with
# Debian's arm64 Python and numpy (no scikit-learn or PyTorch there: those
# tests are skipped; the comparisons with the CLI on one real set of the
# 12). Installs the Debian packages it needs where missing
# (and adds the arm64 architecture to dpkg for the arm64 downloads).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

need=()
for pkg in gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static python3-venv python3-numpy python3-pytest; do
	dpkg -s "$pkg" > /dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
	SUDO=""
	if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" > /dev/null
fi

# wheel ARCH GOARCH CC PLATFORM: build libcalib.so for GOARCH and a wheel tagged PLATFORM.
wheel() {
	local arch=$1 goarch=$2 cc=$3 plat=$4
	mkdir -p "$work/$arch"
	echo "== libcalib.so for $arch"
	GOARCH=$goarch CC=$cc CGO_ENABLED=1 go build -trimpath -buildmode=c-shared -ldflags="-s -w" -o "$work/$arch/libcalib.so" ./cmd/calib/libcalib
	echo "== wheel for $plat"
	# The package's own build backend (python/calib_build.py), as pip runs it.
	(cd python && CALIB_LIBRARY_PREBUILT="$work/$arch/libcalib.so" CALIB_WHEEL_PLATFORM="$plat" /usr/bin/python3 -c 'import sys, calib_build; print(calib_build.build_wheel(sys.argv[1]))' "$out" > "$work/$arch/setup.log" 2>&1) || { cat "$work/$arch/setup.log"; exit 1; }
}
wheel x86_64 amd64 gcc linux_x86_64
wheel aarch64 arm64 aarch64-linux-gnu-gcc linux_aarch64
ls -l "$out"/calib-*-py3-none-linux_*.whl

echo "== the x86_64 wheel: installed without Go, the package's tests"
go build -o "$work/calib-cli" ./cmd/calib
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install -q --no-index "$out"/calib-*-py3-none-linux_x86_64.whl
(cd "$work" && PATH=/usr/bin:/bin CALIB_CLI="$work/calib-cli" "$work/venv/bin/python" -m pytest -p no:cacheprovider -q "$OLDPWD/python/tests" -k "not check_estimator")

echo "== the aarch64 library under qemu-aarch64-static, against the x86_64 one"
gcc -O2 -o "$work/smoke-x86_64" scripts/abi-smoke.c -ldl
aarch64-linux-gnu-gcc -O2 -o "$work/smoke-aarch64" scripts/abi-smoke.c -ldl
"$work/smoke-x86_64" "$work/x86_64/libcalib.so" > "$work/x86_64.out"
qemu-aarch64-static -L /usr/aarch64-linux-gnu "$work/smoke-aarch64" "$work/aarch64/libcalib.so" > "$work/aarch64.out"
# Not bit for bit: the Go compiler fuses x*y + z into one FMA on arm64 (not
# on amd64), so the last bits of some sums differ; every number must agree
# to 1e-9 relative, every other field exactly.
/usr/bin/python3 - "$work/x86_64.out" "$work/aarch64.out" << 'PY'
import json, sys
def load(name):
    code, text = open(name).read().split(" ", 1)
    return int(code), json.loads(text)
def walk(a, b, path, worst):
    if isinstance(a, dict):
        a = {k: v for k, v in a.items() if k not in ("seconds", "provenance")}
        b = {k: v for k, v in b.items() if k not in ("seconds", "provenance")}
        assert a.keys() == b.keys(), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            worst = walk(a[k], b[k], f"{path}.{k}", worst)
        return worst
    if isinstance(a, list):
        assert len(a) == len(b), f"{path}: lengths {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            worst = walk(x, y, f"{path}[{i}]", worst)
        return worst
    if isinstance(a, float) and isinstance(b, float):
        rel = abs(a - b) / max(abs(a), abs(b), 1e-300)
        assert rel <= 1e-9, f"{path}: {a} (x86_64) and {b} (aarch64) differ by {rel:.2g} relative"
        return max(worst, rel)
    assert a == b, f"{path}: {a!r} != {b!r}"
    return worst
(ca, a), (cb, b) = load(sys.argv[1]), load(sys.argv[2])
assert ca == cb == 0, f"codes {ca} (x86_64), {cb} (aarch64)"
print(f"aarch64 under qemu: the same JSON as x86_64, numbers within {walk(a, b, '', 0.0):.2g} relative (code {ca})")
PY
echo "== the aarch64 wheel: the package's tests under qemu-aarch64-static, on Debian's arm64 Python"
# An arm64 sysroot of Debian's own packages (python3.11, numpy, pytest and
# their libraries), unpacked, not installed: the cross libc of
# libc6-arm64-cross, the BLAS and LAPACK links their postinst would make.
# The wheel is unpacked beside it (no arm64 pip); the command line the
# tests compare with is calib built for arm64, run under qemu too. A
# wrapper that qemu names as argv[0] stands for the interpreter, so the
# tests' subprocesses (fork, the out-of-process backend) run under qemu.
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
	SUDO=""
	if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
	$SUDO dpkg --add-architecture arm64
	$SUDO apt-get update -qq
fi
root="$work/arm64root"
mkdir -p "$work/debs" "$root/lib" "$work/site"
skip=" libc6 libgcc-s1 gcc-12-base debconf dpkg perl perl-base perl-modules-5.36 libperl5.36 tar tzdata install-info readline-common libc-bin base-files mime-support media-types mailcap libtirpc-common python3-pkg-resources libblis4-openmp libblis4-pthread libblis4-serial libopenblas0-openmp libopenblas0-pthread libatlas3-base "
arch=()
for p in $(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances python3.11:arm64 python3-numpy:arm64 libffi8:arm64 2> /dev/null | grep -E "^[a-z0-9]" | sed 's/:arm64$//' | sort -u); do
	case "$skip" in *" $p "*) continue ;; esac
	arch+=("$p:arm64")
done
(cd "$work/debs" && apt-get download -qq "${arch[@]}" python3-pytest python3-pluggy python3-iniconfig python3-packaging python3-attr python3-py python3-exceptiongroup python3-tomli python3-more-itertools python3-pkg-resources 2> /dev/null)
for f in "$work"/debs/*.deb; do dpkg-deb -x "$f" "$root"; done
cp -an /usr/aarch64-linux-gnu/lib/. "$root/usr/lib/aarch64-linux-gnu/"
cp -a /usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1 "$root/lib/"
ln -sf blas/libblas.so.3 "$root/usr/lib/aarch64-linux-gnu/libblas.so.3"
ln -sf lapack/liblapack.so.3 "$root/usr/lib/aarch64-linux-gnu/liblapack.so.3"
printf '#!/bin/sh\nexec qemu-aarch64-static -L %s -0 %s %s/usr/bin/python3.11 "$@"\n' "$root" "$work/python-arm64" "$root" > "$work/python-arm64"
CGO_ENABLED=0 GOARCH=arm64 go build -o "$work/calib-arm64-bin" ./cmd/calib
printf '#!/bin/sh\nexec qemu-aarch64-static %s "$@"\n' "$work/calib-arm64-bin" > "$work/calib-arm64"
chmod +x "$work/python-arm64" "$work/calib-arm64"
(cd "$work/site" && /usr/bin/python3 -m zipfile -e "$out"/calib-*-py3-none-linux_aarch64.whl .)
"$work/python-arm64" -c "import platform, numpy; print('arm64 Python', platform.python_version(), platform.machine(), 'numpy', numpy.__version__)"
# Every test file but the comparisons with the command line on all 12 real
# sets, which are run on one (CIFAR-10 DenseNet-121): under emulation the
# whole suite takes over an hour, this about 11 minutes.
(cd "$work" && PYTHONPATH="$work/site" CALIB_CLI="$work/calib-arm64" "$work/python-arm64" -m pytest -p no:cacheprovider -q -rs "$OLDPWD/python/tests" \
	-k "not test_against_cli or cifar10_densenet121-flsd53 or twelve or evaluation_object or options_match or weights_match or probabilities_and_float32")
echo "wheels in $out"
