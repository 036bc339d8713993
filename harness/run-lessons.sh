#!/usr/bin/env bash
# `make run`: build and run every lesson program this machine can run.
#
# CUDA programs need nvcc and an NVIDIA GPU, HIP programs hipcc and an AMD GPU,
# the Triton lab torch + triton + a GPU; the drills need only a C++ compiler.
# The drills run as the reference solutions where solutions/ exists (the course
# repository) and as the starters in exercises/ where it does not (the student
# release); drill 03's counts and graded answers are never echoed: they are its
# answers.
# One line per program: ran, FAILED (with its exit status) or skipped (with the
# reason); a program that starts and then reports "no usable GPU" (status 3) is a
# skip too. Each program's whole output goes to build/run/<program>.log, and the
# last line counts every program. Exit status: 0 when everything that ran passed,
# 1 when anything that ran (or a build) failed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
# nvcc where make test finds it too: the PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin.
: "${NVCC:=$("$repo/harness/find-cuda-tool.sh" nvcc || echo nvcc)}" "${HIPCC:=hipcc}" "${PYTHON:=python3}"
export NVCC
build=${BUILD:-$repo/build}

ran=0 failed=0 skipped=0
failures=()
logs=$build/run
mkdir -p "$logs"

log_of() {  # log_of NAME: build/run/NAME.log, the name's slashes, spaces and brackets made underscores
  local flat=${1//[\/ ()]/_}
  flat=${flat//__/_}
  echo "$logs/${flat%_}.log"
}

shown() {  # a path as the README shows it: from the repository root when it is inside it
  case $1 in "$repo"/*) echo "${1#"$repo"/}" ;; *) echo "$1" ;; esac
}

skip() {  # skip NAME WHY
  printf '%-8s %s: %s\n' skipped "$1" "$2"
  skipped=$((skipped + 1))
}

attempt() {  # attempt NAME COMMAND...: run it, its output into its log; one line says how it went
  local name=$1
  shift
  local log status
  log=$(log_of "$name")
  "$@" >"$log" 2>&1
  status=$?
  case $status in
    0) ran=$((ran + 1)); printf '%-8s %s (log: %s)\n' ran "$name" "$(shown "$log")" ;;
    3) skip "$name" "$(tail -n 1 "$log")" ;;
    *) ran=$((ran + 1)); failed=$((failed + 1)); failures+=("$name")
       printf '%-8s %s: exit status %s (log: %s)\n' FAILED "$name" "$status" "$(shown "$log")" ;;
  esac
}

build_step() {  # build_step WHAT COMMAND...: a build, quiet unless it fails
  local what=$1 log
  log=$(log_of "$what")
  shift
  "$@" >"$log" 2>&1 && return 0
  failed=$((failed + 1)); failures+=("$what")
  printf '%-8s %s: the build failed (log: %s)\n' FAILED "$what" "$(shown "$log")"
  return 1
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

draw_pictures() {  # the trace pictures of Day 31 and Lab 1, from the traces make run just wrote
  "$PYTHON" day31-scan/race_picture.py "$build/day31-scan/race.txt" --out "$build/day31-scan" &&
    "$PYTHON" a05-scan/trace_pictures.py "$build/a05-scan/trace.txt" --out "$build/a05-scan/trace"
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

# Where a student without an NVIDIA GPU runs the CUDA lessons: said on every CUDA line that is skipped.
colab="to run it without one: the Colab notebook, harness/colab/scan-lab.ipynb (README.md, \"No GPU of your own?\")"

# ---- CUDA: Day 31 and A05 Labs 1-2
cuda_programs=("day31-scan/scan.cu:$build/day31-scan/scan"
               "a05-scan/cuda/scan.cu:$build/a05-scan/cuda/scan"
               "a05-scan/cuda/compaction.cu:$build/a05-scan/cuda/compaction")
if ! command -v "$NVCC" >/dev/null 2>&1; then
  for p in "${cuda_programs[@]}"; do
    skip "${p%%:*}" "nvcc not found (not on the PATH, nor in \$CUDA_HOME/bin, \$CUDA_PATH/bin or /usr/local/cuda/bin; see SETUP.md); $colab"
  done
elif ! why=$(nvidia_gpu); then
  for p in "${cuda_programs[@]}"; do skip "${p%%:*}" "$why; $colab"; done
elif build_step "make cuda" make --no-print-directory -j"$(nproc 2>/dev/null || echo 2)" cuda; then
  for p in "${cuda_programs[@]}"; do attempt "${p%%:*}" "${p#*:}"; done
  # The kernels' own traces (their traced twins, trace.cu), then their pictures where matplotlib is importable.
  attempt "day31-scan/trace.cu" "$build/day31-scan/trace" --trace-out "$build/day31-scan/race.txt"
  attempt "a05-scan/cuda/trace.cu" "$build/a05-scan/cuda/trace" --trace-out "$build/a05-scan/trace.txt"
  if ! "$PYTHON" -c 'import matplotlib' >/dev/null 2>&1; then
    skip "pictures of the traces" "matplotlib is not importable by $PYTHON (pip install -r harness/requirements.txt)"
  elif [ -f "$build/day31-scan/race.txt" ] && [ -f "$build/a05-scan/trace.txt" ]; then
    attempt "pictures of the traces, in $(shown "$build/day31-scan")/race.png and $(shown "$build/a05-scan/trace")/" \
      draw_pictures
  fi
fi

# ---- HIP: A05 Labs 1-2 on an AMD GPU
hip_programs=("a05-scan/hip/scan.cpp:$build/a05-scan/hip/scan"
              "a05-scan/hip/compaction.cpp:$build/a05-scan/hip/compaction")
if ! command -v "$HIPCC" >/dev/null 2>&1; then
  for p in "${hip_programs[@]}"; do skip "${p%%:*}" "hipcc not found (see SETUP.md)"; done
elif ! why=$(amd_gpu); then
  for p in "${hip_programs[@]}"; do skip "${p%%:*}" "$why"; done
elif build_step "make hip" make --no-print-directory -j"$(nproc 2>/dev/null || echo 2)" hip; then
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

if [ "$failed" -gt 0 ]; then
  echo "make run: $ran ran, $failed failed, $skipped skipped; failed: ${failures[*]} (logs in $(shown "$logs"))"
  exit 1
fi
echo "make run: $ran ran, $failed failed, $skipped skipped (logs in $(shown "$logs"))"
exit 0
