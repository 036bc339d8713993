#!/usr/bin/env bash
# Reproduce one of the six scan pitfalls of a05-scan/README.md ("Troubleshooting"), so
# the symptom can be seen rather than read about.
#
#   harness/pitfalls.sh list        the six, with what each changes and what it runs
#   harness/pitfalls.sh N           reproduce pitfall N (1-6); its output also goes to
#                                   build/pitfalls/N.log
#   harness/pitfalls.sh N --patch   only print the one-line change (a diff), run nothing
#
# Each pitfall is either an existing flag of a lesson program, or ONE line changed in
# a copy of a lesson file (the copy lives in build/pitfalls/; the sources are never
# touched), built and run. 1, 2, 3, 5 and 6 need an NVIDIA GPU (6 also Nsight Compute);
# 4 runs on the CPU and needs solutions/ (the course repository).
#
# Exit status: 0 the pitfall was reproduced and shown (the programs themselves fail:
# that is the point); 1 a build failed or the change no longer applies to the source;
# 2 bad command line; 3 the tool or GPU it needs is missing.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
out=${BUILD:-$repo/build}/pitfalls
nvcc=${NVCC:-$("$repo/harness/find-cuda-tool.sh" nvcc || echo nvcc)}
sanitizer=${SANITIZER:-$("$repo/harness/find-cuda-tool.sh" compute-sanitizer || echo compute-sanitizer)}
python=${PYTHON:-python3}

# N: file | the line as it is | the line as the pitfall has it | what it shows
declare -A FILE OLD NEW WHAT
WHAT[1]="read-write hazard: Day 31's in-place kernel (--kernel in-place), then racecheck on it"
FILE[2]=day31-scan/scan.cu
OLD[2]="        __syncthreads();
        src = dst;
    }
    return src;"
NEW[2]="        if (tid >= offset) __syncthreads();  // PITFALL 2: a barrier only some threads reach
        src = dst;
    }
    return src;"
WHAT[2]="barrier in divergent code: the double-buffered step's barrier moved inside 'if (tid >= offset)'; synccheck and racecheck"
FILE[3]=a05-scan/cuda/scan.cu
OLD[3]="            for (size_t i = 0; i < n; ++i) input.values[i] = float(1 + (i % 13) % top);"
NEW[3]="            for (size_t i = 0; i < n; ++i) input.values[i] = float(1 + (i % 13) % top) + 0.1f;  // PITFALL 3"
WHAT[3]="float non-associativity: Lab 1's inputs made non-integers (+ 0.1), so the tree's sums round differently"
FILE[4]=solutions/01_exclusive_to_inclusive.cpp
OLD[4]="    for (std::size_t i = 1; i < n; ++i) excl[i] = incl[i - 1];"
NEW[4]="    for (std::size_t i = 0; i < n; ++i) excl[i + 1] = incl[i];  // PITFALL 4: writes excl[n]"
WHAT[4]="off-by-one and the vanishing total: drill 01's shift written as excl[i + 1] = incl[i] for every i, graded"
FILE[5]=a05-scan/cuda/scan.cu
OLD[5]="        temp[root] = 0.0f;"
NEW[5]="        // PITFALL 5: the root keeps the tile's total instead of the identity 0"
WHAT[5]="the identity: Blelloch's root not cleared to 0 before the down-sweep; Lab 1 at n = 65537, not a power of two"
WHAT[6]="bank conflicts and the padding: make -C a05-scan profile-cuda (Nsight Compute, with and without padding)"

usage() {  # usage [WHY]: what was wrong (one line, on stderr), then the usage, and status 2
  [ $# -gt 0 ] && echo "pitfalls: $1" >&2
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

need() {  # need TOOL WHY
  command -v "$1" >/dev/null 2>&1 || { echo "pitfalls: $1 not found: $2" >&2; exit 3; }
}

# Writes the changed copy of FILE[n] to $out/n/, or says why the change does not apply.
patched() {
  local n=$1 source=${FILE[$1]}
  [ -f "$source" ] || { echo "pitfalls: $source is not here (pitfall $n needs it)" >&2; exit 3; }
  mkdir -p "$out/$n"
  "$python" - "$source" "$out/$n/$(basename "$source")" "${OLD[$n]}" "${NEW[$n]}" <<'EOF' || exit 1
import sys
source, target, old, new = sys.argv[1:]
text = open(source).read()
if text.count(old) != 1:
    sys.exit(f"pitfalls: the line to change is not in {source} exactly once any more: update harness/pitfalls.sh")
open(target, "w").write(text.replace(old, new))
EOF
  echo "$out/$n/$(basename "$source")"
}

arch() {  # the first GPU's sm_XY, for a build of one file
  local cap
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1) || true
  [ -n "$cap" ] || { echo "pitfalls: no NVIDIA GPU (nvidia-smi lists none)" >&2; exit 3; }
  echo "sm_${cap/./}"
}

build() {  # build SOURCE BINARY
  need "$nvcc" "the CUDA toolkit (../SETUP.md)"
  "$nvcc" -std=c++17 -O3 -lineinfo -arch="$sm" -o "$2" "$1" || { echo "pitfalls: the build failed" >&2; exit 1; }
}

[ $# -ge 1 ] || usage "which pitfall? give a number from 1 to 6, or list"
case $1 in
  list)
    for n in 1 2 3 4 5 6; do
      echo "$n  ${WHAT[$n]}"
    done
    exit 0 ;;
  [1-6]) n=$1 ;;
  *) usage "no pitfall '$1': give a number from 1 to 6, or list" ;;
esac
if [ "${2:-}" = "--patch" ]; then
  [ -n "${FILE[$n]:-}" ] || { echo "pitfall $n changes no line: it uses an existing flag or target"; exit 0; }
  copy=$(patched "$n") || exit $?
  diff -u "${FILE[$n]}" "$copy" | sed "1,2s#$repo/##"
  exit 0
fi
[ $# -eq 1 ] || usage "one pitfall at a time, and only --patch after it"

# The GPU's architecture, once: here a missing GPU ends the script with status 3 (inside
# $(...) below, its exit would end only the subshell).
if [ "$n" != 4 ]; then
  sm=$(arch) || exit 3
fi
mkdir -p "$out"
log=$out/$n.log
echo "pitfall $n: ${WHAT[$n]}" | tee "$log"
case $n in
  1)
    make --no-print-directory cuda SM_ARCH="$sm" >/dev/null || exit 1
    scan=${BUILD:-$repo/build}/day31-scan/scan
    "$scan" --n 4096 --block 32,64,256 --kernel in-place,double-buffer 2>&1 | tee -a "$log"
    need "$sanitizer" "it ships with the CUDA toolkit"
    "$sanitizer" --tool racecheck "$scan" --n 4096 --block 256 --kernel in-place 2>&1 | tail -4 | tee -a "$log" ;;
  2)
    copy=$(patched 2) || exit $?
    build "$copy" "$out/2/scan"
    need "$sanitizer" "it ships with the CUDA toolkit"
    # On an H200 the answer came out right and synccheck found nothing; racecheck did.
    for tool in synccheck racecheck; do
      echo "--- compute-sanitizer --tool $tool" | tee -a "$log"
      timeout 120 "$sanitizer" --tool "$tool" "$out/2/scan" --n 4096 --block 256 --kernel double-buffer 2>&1 |
        grep -E '^(threads|-------| +[0-9]+ +inclusive)|matched|Error|SUMMARY' | tee -a "$log"
    done ;;
  3)
    copy=$(patched 3) || exit $?
    build "$copy" "$out/3/scan"
    "$out/3/scan" --part 1,3 --n 65537 --reps 0 2>&1 | tee -a "$log" ;;
  4)
    copy=$(patched 4) || exit $?
    "$python" harness/grade.py drill01 "$copy" --seed 7 2>&1 | tee -a "$log" ;;
  5)
    copy=$(patched 5) || exit $?
    build "$copy" "$out/5/scan"
    "$out/5/scan" --part 1,3 --n 65537 --reps 0 2>&1 | tee -a "$log" ;;
  6)
    make --no-print-directory -C a05-scan profile-cuda SM_ARCH="$sm" 2>&1 | tee -a "$log" ;;
esac
echo "pitfalls: pitfall $n shown above; the whole output is in ${log#"$repo"/}"
exit 0
