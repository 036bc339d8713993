#!/usr/bin/env bash
# `make test`: run the pytest harness with the first Python that has pytest.
#
#   1. python3, if `import pytest` works there (the GPU runner: nothing can be
#      downloaded there, and its python3 already has pytest, torch and triton);
#   2. otherwise .venv/, made once from the pinned harness/requirements.txt.
#
# Extra arguments go to pytest: `make test ARGS="-k day31"` or
# `harness/run-tests.sh -k day31 -x`. JUnit XML lands in build/test-results.xml.
# Exit status: pytest's, except that "no tests collected" (5) becomes 1: a run
# that tested nothing must not pass.
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

mkdir -p build
"$python" -m pytest harness --junitxml=build/test-results.xml ${ARGS:-} "$@"
status=$?
if [ "$status" -eq 5 ]; then
  echo "make test: pytest collected no tests; treating that as a failure" >&2
  exit 1
fi
exit "$status"
