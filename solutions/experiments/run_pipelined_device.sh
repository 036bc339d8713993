#!/usr/bin/env bash
# Issue 25 on the H200, in one call: build, measure the ceiling, check, sanitize, time, tune.
#
#   solutions/experiments/run_pipelined_device.sh               build (unless prebuilt) and run everything
#   solutions/experiments/run_pipelined_device.sh --build-only  just build into $BUILD (e.g. on a machine
#                                                               without a GPU; then carry $BUILD along)
#   solutions/experiments/run_pipelined_device.sh --no-build    use the binaries already in $BUILD
# Environment: BUILD (default build/pipelined, under the repository root), OUT (default
# $BUILD/out: the logs), BUDGET_S (default 340: the whole run; a step that would start with
# less than its share left is skipped, and every step runs under `timeout`), SEED (default 1),
# JOBS (compilers at once, default nproc), BUILD_TIMEOUT_S (240; 3600 with --build-only).
#
# Steps, in order (each under timeout; a failure is recorded and the run goes on):
#   build      nvcc -std=c++17 -O3 -arch=sm_90 -lineinfo: ceiling, pipelined_bench (with CUB), and
#              the tuning builds of pipelined_bench (-DPIPE_NO_CUB, one per stages x tile x stores), in parallel
#   ceiling    experiments/ceiling.cu: copy vs bytes in flight, the bulk-copy ring, the classic tile timeline
#   checks     pipelined_bench --check-only --full --stress (exact checks, exactly-once visits, stress)
#   memcheck, synccheck   compute-sanitizer on pipelined_bench --quick (gated); racecheck (informational)
#   bench      pipelined_bench --bench: 2^20..2^28 against the copy, drill 05's look-back and CUB (+ CSV)
#   tuning     each tuning build at 2^28, float32 (--time-log2 28 --float-only)
#   ncu        DRAM throughput and bytes of one pipelined launch at 2^28 (informational)
#   triton     experiments/triton_single_pass.py, if present (check + timing against torch.cumsum)
# Logs (6 files in $OUT): build.log ceiling.log checks.log bench.log bench.csv extra.log
# (extra: sanitizers, tuning, ncu, triton). The summary table is printed last; steps marked *
# are informational (racecheck does not model the bulk copies' shared-memory writes).
set -u
export PATH="/opt/gcc/bin:$PATH"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build/pipelined}"
OUT="${OUT:-$BUILD/out}"
BUDGET_S="${BUDGET_S:-340}"
SEED="${SEED:-1}"
JOBS="${JOBS:-$(nproc)}"
export JOBS
MODE=all
case "${1:-}" in
  --build-only) MODE=build ;;
  --no-build) MODE=run ;;
  --build-internal) MODE=internal ;;  # the build step itself (a separate process, so `timeout` can run it)
  "") ;;
  *) echo "usage: $0 [--build-only | --no-build]" >&2; exit 2 ;;
esac
mkdir -p "$BUILD" "$OUT"
START=$(date +%s)
SUMMARY=()
elapsed() { echo $(( $(date +%s) - START )); }
# step NAME LIMIT_S LOG CMD...: runs CMD under timeout (the smaller of LIMIT_S and what is left
# of the budget), appends its output to LOG, and records status, seconds and rc.
step() {
  local name=$1 limit=$2 log=$3; shift 3
  local left=$(( BUDGET_S - $(elapsed) ))
  if (( left < 10 )); then SUMMARY+=("$(printf '%-14s %-9s %5s  %s' "$name" skipped - "out of budget")"); return 0; fi
  (( limit > left )) && limit=$left
  local t0=$(date +%s)
  { echo "==== $name: $* (timeout ${limit}s)"; } >>"$log"
  timeout -k 5 "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  local secs=$(( $(date +%s) - t0 ))
  local status=ok
  (( rc == 124 || rc == 137 )) && status=TIMEOUT
  (( rc != 0 && rc != 124 && rc != 137 )) && status="FAIL($rc)"
  echo "==== $name: rc=$rc after ${secs}s" >>"$log"
  SUMMARY+=("$(printf '%-14s %-9s %5s  %s' "$name" "$status" "$secs" "$log")")
  return $rc
}

NVCC="${NVCC:-nvcc}"
FLAGS=(-std=c++17 -O3 -arch=sm_90 -lineinfo -Xcompiler -Wall,-Wextra)
# The tuning builds: name and knobs (the default, 6 x 32 KiB with vector stores, first).
TUNING=(
  "s6_t32_vec:-DPIPE_STAGES=6 -DPIPE_TILE_KIB=32"
  "s6_t32_bulk:-DPIPE_STAGES=6 -DPIPE_TILE_KIB=32 -DPIPE_BULK_STORE=1"
  "s4_t32_vec:-DPIPE_STAGES=4 -DPIPE_TILE_KIB=32"
  "s4_t48_vec:-DPIPE_STAGES=4 -DPIPE_TILE_KIB=48"
  "s3_t64_vec:-DPIPE_STAGES=3 -DPIPE_TILE_KIB=64"
  "s8_t24_vec:-DPIPE_STAGES=8 -DPIPE_TILE_KIB=24"
  "s12_t16_vec:-DPIPE_STAGES=12 -DPIPE_TILE_KIB=16"
  "s6_t32_w8:-DPIPE_STAGES=6 -DPIPE_TILE_KIB=32 -DPIPE_SCAN_WARPS=8"
  "s6_t32_spin0:-DPIPE_STAGES=6 -DPIPE_TILE_KIB=32 -DPIPE_SPIN_NS=0"
)

build_all() {
  local pids=() names=()
  # At most $JOBS compilers at once (default: every core).
  throttle() { while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n 2>/dev/null || true; done; }
  ( cd "$ROOT/solutions" && "$NVCC" "${FLAGS[@]}" -Xptxas -v -o "$BUILD/pipelined_bench" experiments/pipelined_bench.cu ) >"$BUILD/build-bench.txt" 2>&1 & pids+=($!); names+=(bench)
  throttle
  ( cd "$ROOT/solutions/experiments" && "$NVCC" "${FLAGS[@]}" -o "$BUILD/ceiling" ceiling.cu ) >"$BUILD/build-ceiling.txt" 2>&1 & pids+=($!); names+=(ceiling)
  for t in "${TUNING[@]}"; do
    throttle
    local name=${t%%:*} knobs=${t#*:}
    # shellcheck disable=SC2086
    ( cd "$ROOT/solutions" && "$NVCC" "${FLAGS[@]}" -DPIPE_NO_CUB $knobs -o "$BUILD/tune_$name" experiments/pipelined_bench.cu ) >"$BUILD/build-tune_$name.txt" 2>&1 & pids+=($!); names+=("tune_$name")
  done
  local failed=0
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then echo "BUILD FAILED: ${names[$i]}"; failed=1; fi
  done
  for f in "$BUILD"/build-*.txt; do echo "---- $f"; grep -E "error|warning|spill|registers|pipelined_scan" "$f" | grep -v "0 bytes spill" | head -40; done
  return $failed
}

if [[ $MODE == internal ]]; then build_all; exit $?; fi
if [[ $MODE != run ]]; then
  : >"$OUT/build.log"
  # On the H200's host (16 cores) the build takes about a minute; --build-only may be slower.
  BUILD_TIMEOUT_S=${BUILD_TIMEOUT_S:-$([[ $MODE == build ]] && echo 3600 || echo 240)}
  [[ $MODE == build ]] && BUDGET_S=$(( BUILD_TIMEOUT_S + 60 ))
  JOBS="$JOBS" step build "$BUILD_TIMEOUT_S" "$OUT/build.log" bash "$0" --build-internal
  [[ $MODE == build ]] && { printf '%s\n' "${SUMMARY[@]}"; exit 0; }
fi
for f in ceiling pipelined_bench; do
  [[ -x $BUILD/$f ]] || { echo "missing $BUILD/$f (build failed? see $OUT/build.log)"; }
done
GPU="$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | head -1)"
echo "GPU: $GPU" >"$OUT/extra.log"

step ceiling 75 "$OUT/ceiling.log" "$BUILD/ceiling" --reps 10
step checks 150 "$OUT/checks.log" "$BUILD/pipelined_bench" --check-only --full --stress --seed "$SEED" --timeout 30
SAN="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
step memcheck 60 "$OUT/extra.log" "$SAN" --tool memcheck --error-exitcode 9 "$BUILD/pipelined_bench" --quick --seed "$SEED" --timeout 55
step synccheck 60 "$OUT/extra.log" "$SAN" --tool synccheck --error-exitcode 9 "$BUILD/pipelined_bench" --quick --seed "$SEED" --timeout 55
step bench 120 "$OUT/bench.log" "$BUILD/pipelined_bench" --bench --seed "$SEED" --reps 20 --csv "$OUT/bench.csv"
for t in "${TUNING[@]}"; do
  name=${t%%:*}
  [[ -x $BUILD/tune_$name ]] && step "t:$name" 25 "$OUT/extra.log" "$BUILD/tune_$name" --time-log2 28 --float-only --reps 10 --seed "$SEED"
done
if [[ -f $HERE/triton_single_pass.py ]]; then
  step triton 75 "$OUT/extra.log" python3 "$HERE/triton_single_pass.py" --max-log2 28
fi
step racecheck* 40 "$OUT/extra.log" "$SAN" --tool racecheck --error-exitcode 9 "$BUILD/pipelined_bench" --quick --seed "$SEED" --timeout 35
NCU="$(command -v ncu || echo /usr/local/cuda/bin/ncu)"
step ncu 45 "$OUT/extra.log" "$NCU" -k regex:pipelined_scan --launch-skip 1 --launch-count 1 \
  --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
  "$BUILD/pipelined_bench" --time-log2 28 --float-only --reps 1 --seed "$SEED"

# ---- the summary ----------------------------------------------------------------------
echo
echo "================ issue 25 on ${GPU:-?}: $(elapsed) s in all ================"
printf '%-14s %-9s %5s  %s\n' step status secs log
printf '%s\n' "${SUMMARY[@]}"
echo
echo "-- ceiling"; grep -E "^copy = |^best bulk ring|^largest phase|^look-back window|^tickets drawn|instrumented output|^phase|^drawn|^loaded|^published|^prefix" "$OUT/ceiling.log" 2>/dev/null | head -14
echo "-- checks"; grep -E "gated checks|HUNG|FAIL" "$OUT/checks.log" 2>/dev/null | head -8
echo "-- sanitizers"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|gated checks|HUNG" "$OUT/extra.log" 2>/dev/null | head -8
echo "-- bench (2^20, 2^24, 2^28; of copy / vs CUB)"
grep -E "^n +type +scan +check|^2\^(20|22|24|26|28) +(float32|int32)" "$OUT/bench.log" 2>/dev/null | head -22
grep -E "^n +memcpy|^2\^28 +[0-9.]+ +[0-9.]+ " "$OUT/bench.log" 2>/dev/null | head -2
sed -n '/^Targets/,/^$/p' "$OUT/bench.log" 2>/dev/null
echo "-- tuning (n = 2^28, float32)"; grep -E "^tuning:" "$OUT/extra.log" 2>/dev/null | sed 's/^tuning: //' | head -24
echo "-- ncu"; grep -E "dram__|gpu__time|ERR_|==ERROR==" "$OUT/extra.log" 2>/dev/null | grep -v "^====" | head -6
echo "-- triton"; grep -E "^triton" "$OUT/extra.log" 2>/dev/null | head -14
echo "logs: $OUT ($(ls "$OUT" | tr '\n' ' '))"
