#!/usr/bin/env bash
# Refresh the README's pictures in docs/screenshots/: the browser tests that take them,
# told to write there instead of a temporary folder. Run after a change to a page.
set -euo pipefail
cd "$(dirname "$0")/.."
STEPWISE_SCREENSHOTS="$PWD/docs/screenshots" python3 -m pytest -q -p no:cacheprovider \
  tests/e2e --deselect tests/e2e/test_slow_server_in_browser.py "$@"
