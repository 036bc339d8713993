#!/usr/bin/env bash
# `make run`: build and run every lesson program this machine can run.
#
# CUDA programs need nvcc and an NVIDIA GPU, HIP programs hipcc and an AMD GPU,
# the Triton lab torch + triton + a GPU; the drills need only a C++ compiler.
# The drills run as the reference solutions where solutions/ exists (the course
# repository) and as the starters in exercises/ where it does not (the student
# release); drill 03's counts and graded answers are never echoed: they are its
# answers.
# Whatever cannot run here gets one line saying what was skipped and why; a
# program that starts and then reports "no usable GPU" (status 3) is a skip too.
# Exit status: 0 when everything that ran passed, 1 when anything that ran failed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
: "${NVCC:=nvcc}" "${HIPCC:=hipcc}" "${PYTHON:=python3}"
build=${BUILD:-$repo/build}

ran=0 failed=0 skipped=0
failures=()

skip() {  # skip NAME WHY
  echo "skip: $1: $2"
  skipped=$((skipped + 1))
}

attempt() {  # attempt NAME COMMAND...: run it, and read its exit status
  local name=$1
  shift
  echo
  echo "==== $name: $*"
  local log status
  log=$(mktemp)
  "$@" 2> >(tee "$log" >&2)
  status=$?
  wait
  case $status in
    0) ran=$((ran + 1)) ;;
    3) skip "$name" "$(tail -n 1 "$log")" ;;
    *) ran=$((ran + 1)); failed=$((failed + 1)); failures+=("$name (exit $status)") ;;
  esac
  rm -f "$log"
}

hide_drill03() {  # hide_drill03 COMMAND...: run it, holding back the output of its 03_scan_analysis sections
  # A section starts at its "==== 03_scan_analysis" line and ends at its verdict line (PASS,
  # FAILED or score, which is shown), or at the next line of the Makefile's own.
  "$@" | awk '
    function done_hiding() {
      if (hidden) printf "  (%d lines of drill 03 answers not shown)\n", hidden
      secret = 0; hidden = 0
    }
    /^(==== |make run:|skipped )/ { done_hiding(); secret = ($0 ~ /^==== 03_scan_analysis/); print; next }
    secret && /^(PASS|FAILED|score [0-9])/ { done_hiding(); print; next }
    secret { if ($0 != "") hidden++; next }
    { print }
    END { done_hiding() }'
  return "${PIPESTATUS[0]}"
}

nvidia_gpu() {
  command -v nvidia-smi >/dev/null 2>&1 || { echo "no NVIDIA GPU (nvidia-smi not found)"; return 1; }
  nvidia-smi -L 2>/dev/null | grep -q '^GPU' || { echo "no NVIDIA GPU (nvidia-smi lists none)"; return 1; }
}

amd_gpu() {
  [ -e /dev/kfd ] || { echo "no AMD GPU (/dev/kfd is absent)"; return 1; }
  local agents
  agents=$( (rocm_agent_enumerator 2>/dev/null || rocminfo 2>/dev/null) | grep -o 'gfx[0-9a-f]*' | grep -v '^gfx000$')
  [ -n "$agents" ] || { echo "no AMD GPU (ROCm lists no gfx agent)"; return 1; }
}

# ---- CUDA: Day 31 and A05 Labs 1-2
cuda_programs=("day31-scan/scan.cu:$build/day31-scan/scan"
               "a05-scan/cuda/scan.cu:$build/a05-scan/cuda/scan"
               "a05-scan/cuda/compaction.cu:$build/a05-scan/cuda/compaction")
if ! command -v "$NVCC" >/dev/null 2>&1; then
  for p in "${cuda_programs[@]}"; do skip "${p%%:*}" "nvcc not found (see SETUP.md)"; done
elif ! why=$(nvidia_gpu); then
  for p in "${cuda_programs[@]}"; do skip "${p%%:*}" "$why"; done
elif ! make --no-print-directory cuda; then
  failed=$((failed + 1)); failures+=("make cuda (build failed)")
else
  for p in "${cuda_programs[@]}"; do attempt "${p%%:*}" "${p#*:}"; done
fi

# ---- HIP: A05 Labs 1-2 on an AMD GPU
hip_programs=("a05-scan/hip/scan.cpp:$build/a05-scan/hip/scan"
              "a05-scan/hip/compaction.cpp:$build/a05-scan/hip/compaction")
if ! command -v "$HIPCC" >/dev/null 2>&1; then
  for p in "${hip_programs[@]}"; do skip "${p%%:*}" "hipcc not found (see SETUP.md)"; done
elif ! why=$(amd_gpu); then
  for p in "${hip_programs[@]}"; do skip "${p%%:*}" "$why"; done
elif ! make --no-print-directory hip; then
  failed=$((failed + 1)); failures+=("make hip (build failed)")
else
  for p in "${hip_programs[@]}"; do attempt "${p%%:*}" "${p#*:}"; done
fi

# ---- Triton: A05 Lab 3 (the script itself says, with status 3, when torch, triton or a GPU is missing)
if ! "$PYTHON" -c 'import torch, triton' >/dev/null 2>&1; then
  skip "a05-scan/triton/scan.py" "torch and triton are not importable by $PYTHON (see SETUP.md)"
else
  attempt "a05-scan/triton/scan.py" "$PYTHON" a05-scan/triton/scan.py --out "$build/a05-scan/triton"
fi

# ---- the drills: plain C++ on the CPU (the reference solutions, or the starters in a student release)
if [ -f solutions/Makefile ]; then
  drills=("solutions (drills)" hide_drill03 make --no-print-directory -C solutions run)
else
  drills=("exercises (drills)" make --no-print-directory -C exercises run)
fi
if ! command -v "${CXX:-g++}" >/dev/null 2>&1; then
  skip "${drills[0]}" "no C++ compiler (${CXX:-g++})"
else
  attempt "${drills[@]}"
fi

echo
echo "make run: $ran ran, $failed failed, $skipped skipped"
if [ "$failed" -gt 0 ]; then
  printf 'failed: %s\n' "${failures[@]}"
  exit 1
fi
exit 0
