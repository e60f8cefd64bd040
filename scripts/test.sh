#!/usr/bin/env bash
# Installs what the test suite needs (Python packages, Debian's chromium for the browser
# tests) and runs the whole suite. CI runs exactly this (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
fi
python3 -m pip install --disable-pip-version-check -q -r requirements-test.txt

# Each run gets its own store; the suite starts any server it needs itself.
python3 -m pytest -q -p no:cacheprovider "$@"
