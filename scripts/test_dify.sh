#!/usr/bin/env bash
# `make test-dify`: run every shipped chatflow in Dify's OWN api server (tests/dify/).
# Sets up what it needs on a fresh machine: Debian's postgresql and redis-server packages, a venv of its own for
# Dify's api (.venv-dify, rebuilt when ../shared/dify/requirements-dify-api.txt changes), then runs the tests with
# the project's .venv. Every process the tests start is stopped by pid when they end, however they end.
# Fails (never skips) when ../shared/dify is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
started=$(date +%s)
phase() { echo "==> test-dify: $*"; }
took() { echo "==> test-dify: $1: $(( $(date +%s) - $2 )) s"; }

# --- Dify's pinned source ------------------------------------------------------------------------------------
# ../shared/dify next to the checkout; from a git worktree, next to the main checkout.
SHARED="${GCITE_DIFY_SHARED:-}"
looked="${SHARED:-$ROOT/../shared/dify}"
if [ -z "$SHARED" ]; then
  for candidate in "$ROOT/../shared/dify" "$(git rev-parse --path-format=absolute --git-common-dir 2>/dev/null || echo /nonexistent)/../../shared/dify"; do
    if [ -d "$candidate" ]; then SHARED=$(cd "$candidate" && pwd); break; fi
  done
fi
TARBALL=$(ls "${SHARED:-/nonexistent}"/dify-api-*.tar.gz 2>/dev/null | head -1 || true)
REQS="${SHARED:-/nonexistent}/requirements-dify-api.txt"
if [ -z "$SHARED" ] || [ -z "$TARBALL" ] || [ ! -f "$REQS" ]; then
  echo "error: test-dify needs Dify's api source and package list in ../shared/dify/ (dify-api-*.tar.gz and" >&2
  echo "       requirements-dify-api.txt, next to this checkout); not found (looked at $looked)." >&2
  echo "       Set GCITE_DIFY_SHARED=/path/to/shared/dify to use another place. Nothing was run." >&2
  exit 1
fi
phase "Dify source $TARBALL"

# --- Debian packages ---------------------------------------------------------------------------------------
t=$(date +%s)
missing=()
dpkg -s postgresql >/dev/null 2>&1 || missing+=(postgresql)
dpkg -s redis-server >/dev/null 2>&1 || missing+=(redis-server)
if [ ${#missing[@]} -gt 0 ]; then
  phase "installing Debian packages: ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
took "Debian packages (postgresql, redis-server)" "$t"

# --- Dify's venv, cached by the package list's hash ------------------------------------------------------------
t=$(date +%s)
VENV="$ROOT/.venv-dify"
HASH=$( (cat "$REQS"; echo "$(basename "$TARBALL")") | cksum | cut -d' ' -f1)
STAMP="$VENV/.installed-$HASH"
if [ ! -f "$STAMP" ]; then
  phase "creating $VENV for Dify's api (the package list changed, or this is the first run; about 360 MB)"
  py312=$(scripts/find_python.sh 3.12)
  rm -rf "$VENV"
  "$py312" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q --upgrade pip
  # --no-deps: the lock's overrides make a fresh resolve fail (../shared/dify/README.md)
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q --no-deps -r "$REQS"
  agent=$(mktemp -d)
  tar xzf "$TARBALL" -C "$agent" dify-agent
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q --no-deps --no-build-isolation "$agent/dify-agent"
  rm -rf "$agent"
  touch "$STAMP"
fi
took "Dify venv ($VENV)" "$t"

# --- the tests; whatever happens, every pid they started is stopped ----------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gcite-test-dify.XXXXXX")
cleanup() {
  if [ -f "$WORK/pids" ]; then
    while read -r pid name; do
      if kill -0 "$pid" 2>/dev/null; then
        echo "==> test-dify: stopping $name (pid $pid)"
        kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
      fi
    done < "$WORK/pids"
    sleep 2
    while read -r pid name; do
      kill -KILL -- "-$pid" 2>/dev/null || true
    done < "$WORK/pids"
  fi
  if [ "${GCITE_DIFY_KEEP:-}" = 1 ]; then echo "==> test-dify: work folder kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
tests_pid=""
stop_tests() { [ -n "$tests_pid" ] && kill -TERM "$tests_pid" 2>/dev/null; exit 130; }
trap stop_tests INT TERM

export GCITE_TEST_DIFY=1 GCITE_DIFY_TARBALL="$TARBALL" GCITE_DIFY_PYTHON="$VENV/bin/python" GCITE_DIFY_WORK="$WORK"
status=0
# in the background so that a signal to this script is handled at once (bash defers traps during a foreground job)
.venv/bin/python -m pytest -q -s -p no:cacheprovider tests/dify "$@" &
tests_pid=$!
wait "$tests_pid" || status=$?
tests_pid=""
echo "==> test-dify: total $(( $(date +%s) - started )) s"
exit $status
