#!/usr/bin/env bash
# The pipelined scan on the H200, in one call: build, check, sanitize, ablate, measure the ceiling, the
# library benchmark with the pipelined rows, ncu, Triton. About 200 s on a 16-core H100 or H200 machine
# (2026-12-06, H100: 174 s with BUDGET_S=420; the ablation alone 44 s, its 32 exact checks at 2^28 included).
#
#   solutions/experiments/run_pipelined_device.sh               build (unless prebuilt) and run everything
#   solutions/experiments/run_pipelined_device.sh --build-only  just build into $BUILD (e.g. on a machine
#                                                               without a GPU; then carry $BUILD along)
#   solutions/experiments/run_pipelined_device.sh --no-build    use the binaries already in $BUILD
# Environment: BUILD (default build/pipelined, under the repository root), OUT (default
# $BUILD/out: the logs), BUDGET_S (default 220: the whole run, build included; a step that would
# start with less than 10 s left is skipped, and every step runs under `timeout`, capped by what is
# left), SEED (default 1), JOBS (compilers at once, default nproc), BUILD_TIMEOUT_S (75; 3600 with
# --build-only). BENCH_LIBRARIES=full (or BUDGET_S >= 330) runs the whole library benchmark (about two
# minutes more: drill 05's bench, the 3-phase scan, torch); otherwise only the pipelined bench is
# timed there and the other rows come from the committed solutions/results/h200-libraries.csv.
#
# Steps, in order (each under timeout; a failure is recorded and the run goes on):
#   build      nvcc -std=c++17 -O3 -arch=sm_90 -lineinfo: pipelined_bench (with CUB), ablation
#              (pipelined_bench -DPIPE_ABLATION -DPIPE_NO_CUB: every design step's build in one
#              binary), ceiling; with BENCH_LIBRARIES=full also drill 05's bench and a05-scan; in parallel
#   checks     pipelined_bench --check-only --stress (exact checks, exactly-once visits, stress at 2^28)
#   memcheck, synccheck   compute-sanitizer on pipelined_bench --quick (gated)
#   ablation   ablation --ablation: one row per design step at 2^28 float32, and the Markdown table
#   ceiling    experiments/ceiling.cu: copy vs bytes in flight, the bulk-copy ring, the classic tile timeline
#   libraries  bench_libraries.py --pipelined: 2^16..2^28, libraries.csv / .png into $OUT (the
#              pipelined bench's own log, the old bench.log, is $OUT/libraries/pipelined.log)
#   ncu        DRAM throughput and bytes of one pipelined launch at 2^28 (informational)
#   triton     experiments/triton_single_pass.py (check + timing against torch.cumsum)
#   racecheck* informational: racecheck does not model the bulk copies' shared-memory writes
# Logs in $OUT: build.log checks.log ablation.log ceiling.log extra.log (sanitizers, ncu, triton),
# libraries/ (libraries.csv, libraries.png, pipelined.log, pipelined.csv). The summary is printed
# last, with the ablation's Markdown table to paste into solutions/README-pipelined.md.
set -u
export PATH="/opt/gcc/bin:$PATH"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="${BUILD:-$ROOT/build/pipelined}"
OUT="${OUT:-$BUILD/out}"
BUDGET_S="${BUDGET_S:-220}"
BENCH_LIBRARIES="${BENCH_LIBRARIES:-$( (( BUDGET_S >= 330 )) && echo full || echo pipelined)}"
SEED="${SEED:-1}"
JOBS="${JOBS:-$(nproc)}"
export JOBS BENCH_LIBRARIES  # not LIBRARIES: nvcc reads that one (nvcc.profile) and links its words
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
build_all() {
  local pids=() names=()
  # At most $JOBS compilers at once (default: every core).
  throttle() { while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n 2>/dev/null || true; done; }
  ( cd "$ROOT/solutions" && "$NVCC" "${FLAGS[@]}" -Xptxas -v -o "$BUILD/pipelined_bench" experiments/pipelined_bench.cu ) >"$BUILD/build-bench.txt" 2>&1 & pids+=($!); names+=(bench)
  throttle
  ( cd "$ROOT/solutions" && "$NVCC" "${FLAGS[@]}" -Xptxas -v -DPIPE_NO_CUB -DPIPE_ABLATION -o "$BUILD/ablation" experiments/pipelined_bench.cu ) >"$BUILD/build-ablation.txt" 2>&1 & pids+=($!); names+=(ablation)
  throttle
  ( cd "$ROOT/solutions/experiments" && "$NVCC" "${FLAGS[@]}" -o "$BUILD/ceiling" ceiling.cu ) >"$BUILD/build-ceiling.txt" 2>&1 & pids+=($!); names+=(ceiling)
  if [[ $BENCH_LIBRARIES == full ]]; then  # the library benchmark's other two programs, sm_90 only
    throttle
    make -s -C "$ROOT/solutions" "$BUILD/solutions/cuda/05_lookback_scan" BUILD="$BUILD" SM_ARCH=sm_90 >"$BUILD/build-lookback.txt" 2>&1 & pids+=($!); names+=(lookback)
    throttle
    make -s -C "$ROOT/a05-scan" cuda BUILD="$BUILD" SM_ARCH=sm_90 >"$BUILD/build-a05.txt" 2>&1 & pids+=($!); names+=(a05-scan)
  fi
  local failed=0
  for i in "${!pids[@]}"; do
    if ! wait "${pids[$i]}"; then echo "BUILD FAILED: ${names[$i]}"; failed=1; fi
  done
  for f in "$BUILD"/build-*.txt; do echo "---- $f"; grep -iE "error|warning|[1-9][0-9]* bytes spill" "$f" | head -20; done
  echo "---- registers of the default build (pipelined_bench):"; grep -A2 "PipeShapeILi16384ELi12ELi4ELb0ELb0ELb1ELb1E" "$BUILD/build-bench.txt" | grep -E "Used" | head -4
  return $failed
}

if [[ $MODE == internal ]]; then build_all; exit $?; fi
if [[ $MODE != run ]]; then
  : >"$OUT/build.log"
  # On the H200's host (16 cores) the build takes about 30 s; --build-only may be slower.
  BUILD_TIMEOUT_S=${BUILD_TIMEOUT_S:-$([[ $MODE == build ]] && echo 3600 || echo 75)}
  [[ $MODE == build ]] && BUDGET_S=$(( BUILD_TIMEOUT_S + 60 ))
  JOBS="$JOBS" step build "$BUILD_TIMEOUT_S" "$OUT/build.log" bash "$0" --build-internal
  [[ $MODE == build ]] && { printf '%s\n' "${SUMMARY[@]}"; exit 0; }
fi
for f in ceiling pipelined_bench ablation; do
  [[ -x $BUILD/$f ]] || { echo "missing $BUILD/$f (build failed? see $OUT/build.log)"; }
done
GPU="$(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | head -1)"
echo "GPU: $GPU" >"$OUT/extra.log"

SAN="$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)"
step checks 40 "$OUT/checks.log" "$BUILD/pipelined_bench" --check-only --stress --seed "$SEED" --timeout 30
step memcheck 20 "$OUT/extra.log" "$SAN" --tool memcheck --error-exitcode 9 "$BUILD/pipelined_bench" --quick --seed "$SEED" --timeout 15
step synccheck 20 "$OUT/extra.log" "$SAN" --tool synccheck --error-exitcode 9 "$BUILD/pipelined_bench" --quick --seed "$SEED" --timeout 15
step ablation 75 "$OUT/ablation.log" "$BUILD/ablation" --ablation --reps 10 --seed "$SEED" --timeout 20
step ceiling 25 "$OUT/ceiling.log" "$BUILD/ceiling" --reps 3
LIB=(python3 "$ROOT/solutions/bench_libraries.py" --pipelined "$BUILD/pipelined_bench" --out "$OUT/libraries" --min 16 --reps 10 --seed "$SEED")
if [[ $BENCH_LIBRARIES == full && ! -x $BUILD/solutions/cuda/05_lookback_scan ]]; then
  echo "libraries: $BUILD holds no full build (drill 05's bench, a05-scan): only the pipelined rows are timed" >&2
  BENCH_LIBRARIES=pipelined
fi
if [[ $BENCH_LIBRARIES == full ]]; then
  step libraries 170 "$OUT/extra.log" "${LIB[@]}" --lookback "$BUILD/solutions/cuda/05_lookback_scan" --scan "$BUILD/a05-scan/cuda/scan"
else
  step libraries 50 "$OUT/extra.log" "${LIB[@]}" --parts pipelined --reuse "$ROOT/solutions/results/h200-libraries.csv"
fi
NCU="$(command -v ncu || echo /usr/local/cuda/bin/ncu)"
step ncu 15 "$OUT/extra.log" "$NCU" -k regex:pipelined_scan --launch-skip 1 --launch-count 1 \
  --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
  "$BUILD/pipelined_bench" --time-log2 28 --float-only --reps 1 --seed "$SEED"
[[ -f $HERE/triton_single_pass.py ]] && step triton 35 "$OUT/extra.log" python3 "$HERE/triton_single_pass.py" --max-log2 28 --reps 5
step racecheck* 12 "$OUT/extra.log" "$SAN" --tool racecheck --error-exitcode 9 --print-limit 4 "$BUILD/pipelined_bench" --quick --seed "$SEED" --timeout 10

# ---- the summary ----------------------------------------------------------------------
echo
echo "================ the pipelined scan on ${GPU:-?}: $(elapsed) s in all ================"
printf '%-14s %-9s %5s  %s\n' step status secs log
printf '%s\n' "${SUMMARY[@]}"
echo
echo "-- ceiling"; grep -E "^copy = |^best bulk ring|^Part 3|instrumented output|^phase|^drawn|^loaded|^published|^prefix|^look-back window|^tickets drawn|^largest phase" "$OUT/ceiling.log" 2>/dev/null | head -16
echo "-- checks"; grep -E "gated checks|HUNG|FAIL" "$OUT/checks.log" 2>/dev/null | head -8
echo "-- sanitizers"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|gated checks|HUNG" "$OUT/extra.log" 2>/dev/null | head -8
echo "-- ablation (n = 2^28 float32; paste into solutions/README-pipelined.md)"
sed -n '/^ablation markdown/,/^| scan warps/p' "$OUT/ablation.log" 2>/dev/null | grep -v '^$'; grep -E "gated checks|FAIL" "$OUT/ablation.log" 2>/dev/null | tail -3
PLOG="$OUT/libraries/pipelined.log"
echo "-- pipelined bench (from the library benchmark: $PLOG; of copy / vs CUB)"
grep -E "^n +type +scan +check|^2\^(16|20|22|23|24|26|28) +(float32|int32)" "$PLOG" 2>/dev/null | head -30
sed -n '/^Targets/,/^$/p' "$PLOG" 2>/dev/null
echo "-- libraries"; grep -E "^bench_libraries|every implementation matched|^pipelined:|^GPU:" "$OUT/extra.log" 2>/dev/null | tail -4
echo "-- ncu"; grep -E "dram__|gpu__time|ERR_|==ERROR==" "$OUT/extra.log" 2>/dev/null | grep -v "^====" | head -6
echo "-- triton"; grep -E "^triton" "$OUT/extra.log" 2>/dev/null | head -24
echo "logs: $OUT ($(ls "$OUT" | tr '\n' ' '))"
