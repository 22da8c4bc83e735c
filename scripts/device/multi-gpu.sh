#!/usr/bin/env bash
# Multi-GPU checks for a machine with two or more CUDA devices (the nvidia-h200-x2
# kind): builds the multi-GPU test and benchmark (reusing $BUILD when it is already
# configured), runs the test, the test again under compute-sanitizer memcheck, and
# the cross-device copy benchmark. Logs go to $OUT:
#   machine.txt          GPUs, driver, interconnect (nvidia-smi topo -m)
#   build.log            configure + build output
#   multi_gpu_test.log   the test (gtest XML in multi_gpu_test.xml)
#   memcheck.log         compute-sanitizer --tool memcheck over the test
#   multi_gpu_bench.txt / .json   bandwidth per variant and size
#   summary.txt          one line per step with its exit status
# Exit status: 0 when every step passed, 1 otherwise.
#   scripts/device/multi-gpu.sh [steps...]   steps: build test memcheck bench (default: all)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/devicearray-out}"
mkdir -p "$OUT"
BUILD="${BUILD:-build-device}"
steps="${*:-build test memcheck bench}"
# NVLink multicast stays off on the lent machines.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

run_step() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
status=0
note() { echo "$1" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"

{
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,pci.bus_id --format=csv
  echo
  nvidia-smi topo -m
} > "$OUT/machine.txt" 2>&1
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
note "gpus: $gpus"
if [ "$gpus" -lt 2 ]; then
  note "warning: fewer than two GPUs; the multi-GPU test will skip and the benchmark print a skip line"
fi

if run_step build; then
  {
    if [ ! -f "$BUILD/CMakeCache.txt" ]; then
      cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES=90 \
            -DDEVICEARRAY_BUILD_PYTHON=OFF
    fi
    cmake --build "$BUILD" -j"$(nproc)" --target multi_gpu_test multi_gpu_bench
  } > "$OUT/build.log" 2>&1
  rc=$?
  note "build: rc=$rc ($(tail -1 "$OUT/build.log"))"
  [ $rc -eq 0 ] || { status=1; tail -40 "$OUT/build.log"; }
fi

TEST="$BUILD/tests/multi_gpu_test"
BENCH="$BUILD/bench/multi_gpu_bench"

if run_step test; then
  if [ -x "$TEST" ]; then
    "$TEST" --gtest_output=xml:"$OUT/multi_gpu_test.xml" > "$OUT/multi_gpu_test.log" 2>&1
    rc=$?
    note "test: rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$OUT/multi_gpu_test.log" | tr '\n' ' ')"
    grep -E '^\[  FAILED  \]|Skipped|^needs ' "$OUT/multi_gpu_test.log" | head -20
    [ $rc -eq 0 ] || status=1
  else
    note "test: missing $TEST"; status=1
  fi
fi

if run_step memcheck; then
  if [ -x "$TEST" ]; then
    # The release test allocates ~26% of each device per round; memcheck tracks every
    # allocation, so it runs here too (it is the check that frees land on the right device).
    compute-sanitizer --tool memcheck --leak-check full --error-exitcode 99 --print-limit 20 \
        "$TEST" --gtest_brief=1 > "$OUT/memcheck.log" 2>&1
    rc=$?
    note "memcheck: rc=$rc $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.log" | tail -1)"
    [ $rc -eq 0 ] || status=1
  else
    note "memcheck: missing $TEST"; status=1
  fi
fi

if run_step bench; then
  if [ -x "$BENCH" ]; then
    "$BENCH" --benchmark_min_time="${BENCH_MIN_TIME:-0.2}" --benchmark_filter="${BENCH_FILTER:-.}" \
        --benchmark_format=console --benchmark_out_format=json --benchmark_out="$OUT/multi_gpu_bench.json" \
        > "$OUT/multi_gpu_bench.txt" 2>&1
    rc=$?
    note "bench: rc=$rc"
    grep -E 'cross_device|skipped' "$OUT/multi_gpu_bench.txt" | head -40
    [ $rc -eq 0 ] || status=1
  else
    note "bench: missing $BENCH"; status=1
  fi
fi
exit $status
