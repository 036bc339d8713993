#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu base).
# It installs what the CPU graders need and then grades every CPU exercise's untouched
# starter, which builds and caches the drivers (in source/cache) and makes a missing tool
# fail here, in the build log, instead of in a student's results; last, it closes
# /autograder/source to every other uid (root's, mode 0700/0600: in partial isolation the
# sandboxed runs could read it otherwise; run_autograder does it again before each grading).
# Day 31 needs an NVIDIA GPU and is not graded on Gradescope's standard machines
# (harness/README.md, "Gradescope").
#
#   python3 (>= 3.11)   the graders (harness/grade.py and scanlab/)
#   g++                 compiles the drill submissions and the harness's drivers
#   binutils            nm, objcopy and c++filt: symbol checks and renaming a student's main
#   bubblewrap          the sandbox; where the container forbids namespaces the graders fall
#                       back to partial isolation and each results.json says so
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends python3 g++ binutils bubblewrap
# The graders need Python 3.11 or newer (tomllib reads harness/exercises.toml). Ubuntu 24.04's
# python3 is; 22.04's is 3.10, and its python3.11 package is the one to take.
python=python3
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  apt-get install -y --no-install-recommends python3.11
  python=python3.11
fi
ln -sf "$(command -v "$python")" /usr/local/bin/scanlab-python3  # what run_autograder runs
scanlab-python3 "$here/harness/gradescope/run_autograder.py" --prepare --root "$(dirname "$here")"
