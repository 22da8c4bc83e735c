#!/usr/bin/env bash
# The whole device verification in two calls of the device tool (each under its
# 10-minute limit), for a machine with two GPUs (nvidia-h200-x2; with one GPU the
# soak shares it with the sanitizers and benchmarks):
#
#   phase1: build (with the Python module), the whole CTest suite (CUDA and every
#           OpenCL platform), the Python suite, the multi-GPU test + memcheck +
#           cross-device benchmark, the demo on the GPU; then starts the soak
#           (scripts/device/soak.sh's soak_main, $SOAK_MINUTES) on the last GPU in
#           its own process session, so it outlives the call.
#   phase2: on GPU 0: the C++ benchmarks and bench/compare.py (PyTorch / CuPy peers),
#           compute-sanitizer memcheck/racecheck/synccheck/initcheck over every CUDA
#           test, the real out-of-memory test.
#   final:  one call after a change: build, a $SOAK_MINUTES soak on the last GPU in
#           the background, CTest, pytest, the conversion benchmarks + compare.py
#           (other benchmarks' JSON from $CARRY), the four sanitizers, then collect.
#   verify: final without the soak and with the sanitizers over the conversion tests
#           only, for a kernel change on a short device budget (one GPU is enough).
#   suites: build and the suites (CTest on CUDA and every OpenCL platform, pytest).
#   check:  build, the suites, memcheck --leak-check full over every CUDA test.
#   hostile: the suites, per-file nanobind leak reports, and memcheck --leak-check
#           full over every CUDA test (the hostile-input checks).
#   collect: waits for the soak (at most ~9 minutes) and prints its report; then,
#           with the GPUs free, memcheck --leak-check full over the multi-GPU test
#           and racecheck over the stress test with 2 threads.
#
# Logs go to $LOGS (kept across calls on a warm machine) and are packed into
# $OUT/<phase>.tar.gz with the key summaries copied to $OUT.
#   scripts/device/session.sh phase1|phase2|final|verify|collect
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/devicearray-out}"
LOGS="${LOGS:-/root/da-logs}"
BUILD="${BUILD:-build-device}"
PY="${PYTHON:-/opt/torch/.venv/bin/python3}"
SOAK_MINUTES="${SOAK_MINUTES:-10}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$LOGS"
gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
soakGpu=$((gpus > 1 ? gpus - 1 : 0))
t0=$(date +%s)
stamp() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
# Compiles soak_main against the build and starts it on the last GPU in its own
# process session (it outlives the call); it writes $LOGS/soak.log and, when done,
# its exit status to $LOGS/soak.done.
start_soak() {
  c++ -std=c++20 -O2 -g tests/soak_main.cpp -Iinclude -Isrc -L"$BUILD" -Wl,-rpath,"$PWD/$BUILD" -ldevicearray \
      -pthread -o "$BUILD/soak_main" 2> "$LOGS/soak-compile.log" || cat "$LOGS/soak-compile.log"
  rm -f "$LOGS/soak.done"
  CUDA_VISIBLE_DEVICES=$soakGpu setsid bash -c "'$BUILD/soak_main' $SOAK_MINUTES 8 cuda:0 > '$LOGS/soak.log' 2>&1; echo \$? > '$LOGS/soak.done'" < /dev/null > /dev/null 2>&1 &
}

# Steps of the phases.
build_all() {
  stamp "build"
  DEVICEARRAY_BUILD_PYTHON=ON OUT="$LOGS" scripts/device/run-all.sh build | tail -2
}
suites() {
  stamp "ctest"
  ctest --test-dir "$BUILD" --output-on-failure -j8 --timeout 300 > "$LOGS/ctest.log" 2>&1
  grep -E "tests passed|tests failed|\*\*\*Failed|\(Failed\)" "$LOGS/ctest.log" | tail -12
  stamp "python"
  PYTHON="$PY" scripts/python-test.sh "$BUILD" -q -p no:randomly > "$LOGS/python.log" 2>&1
  grep -E "passed|failed|error" "$LOGS/python.log" | tail -3
}
convert_benchmarks() {
  stamp "convert_bench + compare.py (GPU 0)"
  CUDA_VISIBLE_DEVICES=0 "$BUILD/bench/convert_bench" --benchmark_min_time=0.2 --benchmark_format=json \
      --benchmark_out="$LOGS/convert_bench.json" > "$LOGS/convert_bench.txt" 2>&1
  local jsons=("$LOGS/convert_bench.json")
  for b in core_bench pointcloud_bench dlpack_bench; do [ -f "${CARRY:-/nonexistent}/$b.json" ] && jsons+=("$CARRY/$b.json"); done
  CUDA_VISIBLE_DEVICES=0 PYTHONPATH="$BUILD/python" "$PY" bench/compare.py --from-json "${jsons[@]}" \
      --output "$OUT/PERFORMANCE.md" --chart "$OUT/perf_bandwidth.png" > "$LOGS/compare.log" 2>&1
  echo "compare rc=$?"; grep -E "PASS|MISS" "$LOGS/compare.log" | head -40
}
# device_oom_test is not among the sanitized tests: it has no test named after CUDA
# (the filter would run none, which compute-sanitizer reports as an error), and
# exhausting device memory under a tool that shadows it measures the tool.
cudaTests=""
for t in backend backend_allocation backend_copy_fill backend_depth_conversion backend_launch backend_primitives \
         backend_queue_event convert cuda_backend device_array device dlpack fault_injection gpu_mat_nd_external \
         gpu_mat_nd gpu_mat ordering_cuda ordering point_cloud stress; do cudaTests+=" $BUILD/tests/${t}_test"; done
memcheck_leaks() {  # memcheck --leak-check full over every executable with CUDA tests, 4 at a time
  stamp "memcheck --leak-check full (CUDA tests)"
  mkdir -p "$LOGS/leakcheck"
  printf '%s\n' $cudaTests | CUDA_VISIBLE_DEVICES=0 xargs -P 4 -I{} bash -c \
    'timeout 300 compute-sanitizer --tool memcheck --leak-check full --error-exitcode 99 --print-limit 20 {} \
       --gtest_brief=1 --gtest_filter="*cuda*:*Cuda*:*CUDA*" > "$0/$(basename {}).log" 2>&1; \
     echo "$(basename {}) rc=$? $(grep -h "ERROR SUMMARY" "$0/$(basename {}).log" | tail -1)"' "$LOGS/leakcheck"
}
sanitize() {  # the four compute-sanitizer tools in parallel on GPU 0 over the executables in $1
  stamp "compute-sanitizer (4 tools in parallel, GPU 0)"
  for tool in memcheck racecheck synccheck initcheck; do
    ( CUDA_VISIBLE_DEVICES=0 OUT="$LOGS/san-$tool" SANITIZE_TOOLS=$tool SANITIZE_TESTS="$1" \
        SANITIZE_TIMEOUT="${SANITIZE_TIMEOUT:-200}" scripts/device/run-all.sh sanitize > /dev/null 2>&1 ) &
  done
  wait
  for tool in memcheck racecheck synccheck initcheck; do
    echo "$tool: $(grep -c 'rc=0' "$LOGS/san-$tool/sanitizer-summary.txt") clean of $(wc -l < "$LOGS/san-$tool/sanitizer-summary.txt"); $(grep -v 'rc=0' "$LOGS/san-$tool/sanitizer-summary.txt" | tr '\n' ' ')"
  done
}

case "${1:-}" in
phase1)
  build_all
  cp "$LOGS/machine.txt" "$OUT/" 2>/dev/null
  {
    echo "== toolchain"; g++ --version | head -1; g++ -print-file-name=libstdc++.so; g++ -print-file-name=libstdc++.a
    echo "== ldd libdevicearray"; ldd "$BUILD/libdevicearray.so"
    echo "== libstdc++ linked into libdevicearray (definitions of std::locale::classic; 0 when shared)"
    nm -C "$BUILD/libdevicearray.so" | grep -c "std::locale::classic()"
    echo "== of those, exported (must be 0: --exclude-libs)"; nm -DC --defined-only "$BUILD/libdevicearray.so" | grep -c "std::locale::classic()"
  } > "$LOGS/toolchain.txt" 2>&1
  suites
  stamp "multi-gpu"
  OUT="$LOGS/multi" BUILD="$BUILD" scripts/device/multi-gpu.sh test memcheck bench | tail -12
  stamp "demo"
  scripts/demo.sh "$BUILD" > "$LOGS/demo.log" 2>&1; echo "demo rc=$?"; grep -iE "stage|total|wrote|ms" "$LOGS/demo.log" | head -30
  cp "$BUILD"/demo/*.png "$LOGS/" 2>/dev/null
  stamp "soak start on GPU $soakGpu ($SOAK_MINUTES min)"
  start_soak
  sleep 2; head -3 "$LOGS/soak.log"
  ;;
phase2)
  export CUDA_VISIBLE_DEVICES=0
  stamp "benchmarks"
  OUT="$LOGS" BENCH_MIN_TIME="${BENCH_MIN_TIME:-0.2}" scripts/device/run-all.sh bench
  PYTHONPATH="$BUILD/python" "$PY" bench/compare.py --from-json "$LOGS"/core_bench.json "$LOGS"/convert_bench.json \
      "$LOGS"/pointcloud_bench.json "$LOGS"/dlpack_bench.json --output "$OUT/PERFORMANCE.md" \
      --chart "$OUT/perf_bandwidth.png" --json-out "$LOGS/compare.json" > "$LOGS/compare.log" 2>&1
  echo "compare rc=$?"; grep -E "PASS|MISS|n/a" "$LOGS/compare.log" | head -40
  stamp "device_oom_test"
  "$BUILD/tests/device_oom_test" > "$LOGS/device_oom_test.log" 2>&1; echo "device_oom_test rc=$?"
  SANITIZE_TIMEOUT="${SANITIZE_TIMEOUT:-240}" sanitize "$cudaTests"
  ;;
final)
  # One call after a change: build, a shorter soak on the last GPU in the
  # background, the suites, the conversion benchmarks (+ compare.py with the other
  # benchmarks' JSON from $CARRY when given), and the four sanitizers over the tests
  # that have CUDA instances.
  build_all
  start_soak
  suites
  convert_benchmarks
  sanitize "$cudaTests"
  ;&
collect)
  stamp "waiting for the soak"
  while [ ! -f "$LOGS/soak.done" ] && [ $(( $(date +%s) - t0 )) -lt 560 ]; do sleep 5; done
  echo "soak exit: $(cat "$LOGS/soak.done" 2>/dev/null || echo 'still running')"; cat "$LOGS/soak.log"
  if [ -f "$LOGS/soak.done" ]; then
    # Now that no soak shares the GPUs: the multi-GPU test under memcheck with the
    # leak check (it allocates a quarter of each device), and racecheck over the
    # stress test with 2 threads (with 8 threads launching at once the tool loses
    # track of a launch and reports an internal error).
    [ "$gpus" -gt 1 ] && OUT="$LOGS/multi-final" BUILD="$BUILD" scripts/device/multi-gpu.sh memcheck | tail -2
    DATEST_STRESS_THREADS=2 timeout 300 compute-sanitizer --tool racecheck --error-exitcode 99 \
        "$BUILD/tests/stress_test" --gtest_brief=1 --gtest_filter='*cuda*' > "$LOGS/stress-racecheck.log" 2>&1
    echo "racecheck stress_test (2 threads): rc=$? $(grep 'RACECHECK SUMMARY' "$LOGS/stress-racecheck.log")"
  fi
  ;;
verify)
  # After a kernel change, without the soak (fits one GPU and a short budget): build,
  # the suites, the conversion benchmarks + compare.py, and the four sanitizers over
  # the tests that run the conversions.
  build_all
  suites
  convert_benchmarks
  sanitize "$BUILD/tests/convert_test $BUILD/tests/device_array_test $BUILD/tests/stress_test"
  ;;
suites)
  build_all
  suites
  ;;
check)
  # After a change to the backends: the suites and memcheck with the leak check over
  # every executable with CUDA tests.
  build_all
  suites
  memcheck_leaks
  ;;
hostile)
  # Hostile-input fixes: the suites, then which Python test file (if any) makes
  # nanobind report leaked objects at exit, and memcheck with the leak check over
  # every executable with CUDA tests (4 at a time), the real OOM test left out.
  build_all
  suites
  stamp "nanobind leak report per Python test file"
  for f in tests/python/test_*.py; do
    PYTHONPATH="$BUILD/python" "$PY" -m pytest -q -p no:cacheprovider -p no:randomly "$f" > "$LOGS/leak-$(basename "$f").log" 2>&1
    echo "$(basename "$f"): rc=$? $(grep -cE 'nanobind: leaked' "$LOGS/leak-$(basename "$f").log") leak reports"
  done
  PYTHONPATH="$BUILD/python" "$PY" scripts/device/leak_referrers.py > "$LOGS/leak-referrers.log" 2>&1
  head -40 "$LOGS/leak-referrers.log"
  memcheck_leaks
  ;;
*) echo "usage: $0 phase1|phase2|final|verify|collect|hostile|check|suites" >&2; exit 2 ;;
esac
tar -czf "$OUT/${1}.tar.gz" -C "$LOGS" . 2>/dev/null
stamp "done"
