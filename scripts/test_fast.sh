#!/usr/bin/env bash
# `make test-fast`: every test but the browser tests and the fuzz corpus replay, in three pytest processes at once
# (pytest-xdist cannot be used: dify_plugin's gevent patching kills its workers). `make test` runs it with
# TEST_MARKS="not browser" (the fuzz replay included), then `scripts/test_fast.sh browser`: the browser tests in a
# process of their own.
# The three shards are disjoint folder sets, balanced by measured time (a chatflow test waits on graphon's workers,
# which look for work every 0.1 s: a third process keeps both cores busy meanwhile); every server a test starts
# listens on a port the system picks, and the package venv (tests/support/package_env.py) is built under a lock, so
# the shards share nothing else.
# It says what it runs, then every TEST_PROGRESS_EVERY seconds (default 20, at most 30) a line per shard with the
# tests done of the total (tests/progress.py writes them to a file as pytest runs), and each shard's summary as it
# ends; when all are done, each shard's last line, or its whole output when it failed.
# Each shard is bounded by TEST_FAST_TIMEOUT seconds; the exit status is non-zero when any fails or times out.
set -u
cd "$(dirname "$0")/.."
# Python keeps the bytecode it compiles (an environment may set PYTHONDONTWRITEBYTECODE=1, as these machines do):
# then the plugin processes and `gcite` commands the tests start compile the project once, not each time.
unset PYTHONDONTWRITEBYTECODE
PY=${PY:-.venv/bin/python}
LIMIT=${TEST_FAST_TIMEOUT:-900}
MARKS=${TEST_MARKS:-"not browser and not fuzz_replay"}
EVERY=${TEST_PROGRESS_EVERY:-20}
SHARD_1=(tests/local tests/release tests/plugin)
SHARD_2=(tests/cli tests/citations tests/docs tests/test_layout.py)
SHARD_3=(tests/authoring tests/hostile tests/endpoint tests/js)
SHARDS=3

if [ "${1:-}" = "browser" ]; then  # the browser tests, one process
    SHARD_1=(tests)
    SHARDS=1
    MARKS=browser
elif [ $# -gt 0 ]; then
    echo "usage: scripts/test_fast.sh [browser]" >&2
    exit 2
else
    # a folder added under tests/ must be given to a shard, or its tests would silently not run
    for entry in tests/*/ tests/test_*.py; do
        entry=${entry%/}
        case "$entry" in tests/support|tests/data|tests/fixtures|tests/fuzz_corpus|tests/dify|tests/__pycache__) continue ;; esac
        if [[ ! " ${SHARD_1[*]} ${SHARD_2[*]} ${SHARD_3[*]} " == *" $entry "* ]]; then
            echo "scripts/test_fast.sh: $entry is in no shard" >&2
            exit 2
        fi
    done
fi
if ! [[ "$EVERY" =~ ^[0-9]+$ ]] || [ "$EVERY" -lt 1 ] || [ "$EVERY" -gt 30 ]; then
    echo "scripts/test_fast.sh: TEST_PROGRESS_EVERY=$EVERY: expected a whole number of seconds from 1 to 30" >&2
    exit 2
fi

out=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$out"' EXIT
for ((n = 1; n <= SHARDS; n++)); do
    shard=SHARD_$n[@]
    echo "==> shard $n: $PY -m pytest -q -m \"$MARKS\" ${!shard}"
    GCITE_TEST_PROGRESS="$out/progress.$n" timeout "$LIMIT" "$PY" -m pytest -q -p no:cacheprovider -p tests.progress \
        -m "$MARKS" "${!shard}" >"$out/$n" 2>&1 &
    pids+=($!)
done
echo "    (tests done of the total every $EVERY s; the shards' output when they end)"

progress() {  # [shard N] 412/913 tests done (1 failed), 95 s
    local n=$1 done total failed extra=""
    if [ -s "$out/progress.$n" ] && read -r done total failed <"$out/progress.$n"; then
        [ "${failed:-0}" -gt 0 ] && extra=" ($failed failed)"
        echo "[shard $n] $done/$total tests done$extra, $((SECONDS - started)) s"
    else
        echo "[shard $n] collecting the tests, $((SECONDS - started)) s"
    fi
}

started=$SECONDS
last=$SECONDS
ended=()
while :; do
    running=0
    for ((n = 1; n <= SHARDS; n++)); do
        if kill -0 "${pids[n - 1]}" 2>/dev/null; then
            running=1
        elif [ -z "${ended[n]:-}" ]; then
            ended[n]=1
            echo "[shard $n] ended after $((SECONDS - started)) s: $(tail -n 1 "$out/$n")"
        fi
    done
    [ "$running" -eq 0 ] && break
    sleep 1
    if ((SECONDS - last >= EVERY)); then
        last=$SECONDS
        for ((n = 1; n <= SHARDS; n++)); do
            [ -z "${ended[n]:-}" ] && progress "$n"
        done
    fi
done

status=0
for ((n = 1; n <= SHARDS; n++)); do
    wait "${pids[n - 1]}"
    rc=$?
    shard=SHARD_$n[*]
    echo "==> shard $n: ${!shard}"
    if [ "$rc" -eq 0 ]; then tail -n 1 "$out/$n"; else cat "$out/$n"; fi
    if [ "$rc" -eq 124 ]; then
        echo "shard $n did not finish in $LIMIT s (TEST_FAST_TIMEOUT)" >&2
        status=124
    elif [ "$rc" -ne 0 ] && [ "$status" -eq 0 ]; then
        status=1
    fi
done
exit $status
