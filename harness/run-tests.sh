#!/usr/bin/env bash
# `make test`: run the pytest harness with the first Python that has pytest.
#
#   1. python3, if `import pytest` works there (the GPU runner: nothing can be
#      downloaded there, and its python3 already has pytest, torch and triton);
#   2. otherwise .venv/, made once from the pinned harness/requirements.txt.
#
# Extra arguments go to pytest: `make test ARGS="-k day31"` or
# `harness/run-tests.sh -k day31 -x`. JUnit XML lands in build/test-results.xml
# (SCANLAB_RESULTS=DIR: in DIR instead, with the shard logs; the harness's own tests use it).
# SCANLAB_SHARDS=N runs N pytest processes side by side (see below; .ci/gpu uses it).
# Exit status: pytest's, except that "no tests collected" (5) becomes 1: a run
# that tested nothing must not pass. Sharded: 0 when every shard passed, else 1;
# 2 when SCANLAB_SHARDS is not a positive whole number (one line on stderr).
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
python=${PYTHON:-python3}

if ! "$python" -c 'import pytest' >/dev/null 2>&1; then
  venv="$repo/.venv"
  if ! "$venv/bin/python" -c 'import pytest' >/dev/null 2>&1; then
    echo "make test: no importable pytest in $python; creating $venv from harness/requirements.txt"
    "$python" -m venv "$venv" || { echo "make test: could not create $venv" >&2; exit 1; }
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r harness/requirements.txt ||
      { echo "make test: pip could not install harness/requirements.txt into $venv" >&2; exit 1; }
  fi
  python="$venv/bin/python"
fi

results=${SCANLAB_RESULTS:-build}
mkdir -p "$results"
# ARGS is parsed as the shell would (quotes group words): ARGS="-k 'stretch or trace'".
if [ -n "${ARGS:-}" ]; then eval "set -- ${ARGS} \"\$@\""; fi

shards=${SCANLAB_SHARDS:-1}
case $shards in ''|*[!0-9]*|0) echo "make test: SCANLAB_SHARDS must be a positive whole number, not '$shards'" >&2; exit 2;; esac
if [ "$shards" -eq 1 ]; then
  "$python" -m pytest harness --junitxml="$results/test-results.xml" "$@"
  status=$?
  if [ "$status" -eq 5 ]; then
    echo "make test: pytest collected no tests; treating that as a failure" >&2
    exit 1
  fi
  exit "$status"
fi

# SCANLAB_SHARDS=N: N pytest processes side by side, each on whole test modules
# (harness/scanlab/shards.py balances them), each with its own log and JUnit file
# under build/; the files are merged into build/test-results.xml at the end. A shard
# whose selection (ARGS) leaves it nothing to run is not a failure; a run in which
# no shard ran a test is.
mapfile -t plan < <("$python" harness/scanlab/shards.py "$shards")
temp=$(mktemp -d "${TMPDIR:-/tmp}/scanlab-shards.XXXXXX")
pids=() xmls=()
for i in "${!plan[@]}"; do
  read -ra modules <<< "${plan[$i]}"
  xmls+=("$results/test-results-shard$i.xml")
  "$python" -m pytest -p no:cacheprovider --basetemp="$temp/shard$i" --junitxml="$results/test-results-shard$i.xml" \
    "$@" "${modules[@]}" > "$results/test-shard$i.log" 2>&1 &
  pids+=($!)
  echo "make test: shard $i ($results/test-shard$i.log): ${plan[$i]}"
done
status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"; rc=$?
  echo "make test: shard $i: status $rc: $(tail -n 1 "$results/test-shard$i.log")"
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then
    status=1
    grep -E '^(FAILED|ERROR) ' "$results/test-shard$i.log" | sed "s/^/  shard $i: /"
  fi
done
rm -rf "$temp"
summary=$("$python" harness/scanlab/shards.py --merge "$results/test-results.xml" "${xmls[@]}")
echo "make test: all shards: $summary"
case $summary in 0\ tests*) echo "make test: no shard ran a test; treating that as a failure" >&2; status=1;; esac
exit "$status"
