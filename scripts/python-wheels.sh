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
# aside; numbers within 1e-9 relative: arm64 fuses multiply-adds). Installs
# the Debian packages it needs where missing.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

need=()
for pkg in gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static python3-venv python3-setuptools python3-wheel python3-numpy python3-pytest; do
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
	rm -rf python/build python/calib.egg-info
	(cd python && CALIB_LIBRARY_PREBUILT="$work/$arch/libcalib.so" /usr/bin/python3 setup.py -q bdist_wheel --plat-name "$plat" --dist-dir "$out" > "$work/$arch/setup.log" 2>&1) || { cat "$work/$arch/setup.log"; exit 1; }
	rm -rf python/build python/calib.egg-info
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
echo "wheels in $out"
