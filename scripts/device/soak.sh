#!/usr/bin/env bash
# Device soak and real out-of-memory check (GPU machine; the lead runs it).
#
#   scripts/device/soak.sh [MINUTES=5] [THREADS=8]
#
# Uses the build of scripts/device/run-all.sh (BUILD, default build-device;
# builds it when missing), then:
#   1. device_oom_test: > 141 GB request is Error(OutOfMemory), process keeps working;
#   2. soak_main on cuda:0 for MINUTES, THREADS threads: free memory before/after
#      (must be flat), live allocations back to baseline, every check passes;
#   3. soak_main for 1 minute under compute-sanitizer memcheck (leak check on),
#      then the stress test under racecheck/synccheck.
# Logs and a summary go to $OUT (default /tmp/devicearray-out).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/devicearray-out}"
mkdir -p "$OUT"
BUILD="${BUILD:-build-device}"
MINUTES="${1:-5}"
THREADS="${2:-8}"
export NCCL_NVLS_ENABLE=0
status=0

if [ ! -x "$BUILD/tests/stress_test" ] || [ ! -f "$BUILD/libdevicearray.so" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES=90 > "$OUT/soak-configure.log" 2>&1
  cmake --build "$BUILD" -j16 > "$OUT/soak-build.log" 2>&1 || { tail -30 "$OUT/soak-build.log"; exit 1; }
fi
cmake --build "$BUILD" -j16 --target device_oom_test stress_test > /dev/null 2>&1 || true
# soak_main is not a CTest test (it runs for minutes): compiled here against the build.
c++ -std=c++20 -O2 -g tests/soak_main.cpp -Iinclude -Isrc -L"$BUILD" -Wl,-rpath,"$PWD/$BUILD" -ldevicearray \
    -pthread -o "$BUILD/soak_main" 2> "$OUT/soak-compile.log" || { cat "$OUT/soak-compile.log"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv > "$OUT/soak-gpu.txt" 2>&1

echo "== device_oom_test"
"$BUILD/tests/device_oom_test" > "$OUT/device_oom_test.log" 2>&1 || status=1
grep -E "PASSED|FAILED|SKIPPED|Failure" "$OUT/device_oom_test.log" | head -10

echo "== soak: $MINUTES min, $THREADS threads, cuda:0"
"$BUILD/soak_main" "$MINUTES" "$THREADS" cuda:0 > "$OUT/soak.log" 2>&1 || status=1
cat "$OUT/soak.log"

if command -v compute-sanitizer > /dev/null 2>&1; then
  echo "== compute-sanitizer memcheck --leak-check full: soak 1 min, 4 threads"
  compute-sanitizer --tool memcheck --leak-check full --error-exitcode 3 \
    "$BUILD/soak_main" 1 4 cuda:0 > "$OUT/soak-memcheck.log" 2>&1 || status=1
  grep -E "ERROR SUMMARY|LEAK SUMMARY|soak: (PASS|FAIL|device free)" "$OUT/soak-memcheck.log"
  for tool in racecheck synccheck; do
    echo "== compute-sanitizer $tool: stress_test"
    DATEST_STRESS_ITERATIONS=4 compute-sanitizer --tool "$tool" --error-exitcode 3 \
      "$BUILD/tests/stress_test" --gtest_filter='*cuda*' > "$OUT/stress-$tool.log" 2>&1 || status=1
    grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" "$OUT/stress-$tool.log" | tail -3
  done
else
  echo "compute-sanitizer not found; skipped"
fi
echo "soak.sh: $([ $status = 0 ] && echo PASS || echo FAIL) (logs in $OUT)"
exit $status
