#!/usr/bin/env bash
# The Python package's tests: installs Debian's Python packages where they
# are missing (numpy, pytest, venv, pip; scikit-learn,
# PyTorch and pandas for the optional parts), installs python/ into a
# virtual environment (.venv, built on Debian's /usr/bin/python3 with its
# system packages) in the one command the README gives, and runs pytest on
# python/tests. Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

py=/usr/bin/python3
need=()
for pkg in python3-numpy python3-pytest python3-venv python3-pip python3-sklearn python3-torch python3-pandas; do
	dpkg -s "$pkg" > /dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
	SUDO=""
	if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
	echo "installing ${need[*]}"
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" > /dev/null
fi

rm -rf .venv python/build python/calib.egg-info
$py -m venv --system-site-packages .venv
.venv/bin/pip install --no-build-isolation --no-index ./python
rm -rf python/build python/calib.egg-info

# The command line the tests compare against, built from this checkout.
if [ -z "${CALIB_CLI:-}" ]; then
	CALIB_CLI=$(mktemp -d)/calib
	go build -o "$CALIB_CLI" ./cmd/calib
	export CALIB_CLI
fi
# From the repository root, so that "import calib" is the installed
# package (python/calib has no library of its own).
.venv/bin/python -m pytest -p no:cacheprovider -q python/tests "$@"
