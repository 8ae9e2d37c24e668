#!/usr/bin/env bash
# `make test-fast`: every test but the browser tests and the fuzz corpus replay, in two pytest processes at once
# (pytest-xdist cannot be used: dify_plugin's gevent patching kills its workers). `make test` runs it with
# TEST_MARKS="not browser" (the fuzz replay included), then the browser tests in a process of their own.
# The two shards are disjoint folder sets, balanced by measured time; every server a test starts listens on a port
# the system picks, and the package venv (tests/support/package_env.py) is built under a lock, so the shards share
# nothing else.
# Each shard is bounded by TEST_FAST_TIMEOUT seconds; the exit status is non-zero when either fails or times out.
set -u
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
LIMIT=${TEST_FAST_TIMEOUT:-900}
MARKS=${TEST_MARKS:-"not browser and not fuzz_replay"}
SHARD_1=(tests/local tests/hostile tests/endpoint tests/plugin tests/docs tests/test_layout.py)
SHARD_2=(tests/cli tests/build tests/citations tests/authoring tests/js)

# a folder added under tests/ must be given to a shard, or its tests would silently not run
for entry in tests/*/ tests/test_*.py; do
    entry=${entry%/}
    case "$entry" in tests/support|tests/data|tests/fixtures|tests/fuzz_corpus|tests/dify|tests/__pycache__) continue ;; esac
    if [[ ! " ${SHARD_1[*]} ${SHARD_2[*]} " == *" $entry "* ]]; then
        echo "scripts/test_fast.sh: $entry is in neither shard" >&2
        exit 2
    fi
done

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
timeout "$LIMIT" "$PY" -m pytest -q -p no:cacheprovider -m "$MARKS" "${SHARD_1[@]}" >"$out/1" 2>&1 &
one=$!
timeout "$LIMIT" "$PY" -m pytest -q -p no:cacheprovider -m "$MARKS" "${SHARD_2[@]}" >"$out/2" 2>&1 &
two=$!
wait "$one"; rc1=$?
wait "$two"; rc2=$?
status=0
for n in 1 2; do
    rc=rc$n
    shard=SHARD_$n[*]
    echo "==> shard $n: ${!shard}"
    if [ "${!rc}" -eq 0 ]; then tail -n 1 "$out/$n"; else cat "$out/$n"; fi
    if [ "${!rc}" -eq 124 ]; then
        echo "shard $n did not finish in $LIMIT s (TEST_FAST_TIMEOUT)" >&2
        status=124
    elif [ "${!rc}" -ne 0 ] && [ "$status" -eq 0 ]; then
        status=1
    fi
done
exit $status
