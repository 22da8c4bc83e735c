#!/usr/bin/env bash
# Sanitizer runs of the test suite (docs/RELIABILITY.md says what each proves).
#
#   scripts/sanitize.sh [asan|tsan|all]      (default: all)
#
#   asan: build-asan (-DDEVICEARRAY_SANITIZE=address,undefined), the test suite
#         under AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer.
#   tsan: build-tsan (-DDEVICEARRAY_SANITIZE=thread), the concurrency stress
#         test (tests/stress_test.cpp) under ThreadSanitizer.
#
# Environment: JOBS (default 2), BUILD_ROOT (default: the repository root),
# SANITIZE_FULL=1 runs every test in full (no subsets; for a nightly or a
# machine with more cores), SANITIZE_KEEP_GOING=1 builds past a broken test
# target and runs the tests that did build (local use; the run still fails).
#
# Why CUDA is OFF here: ASan reserves a fixed 16+ TB shadow region of the
# address space and the CUDA driver maps device memory and the UVM aperture into
# the same space, so context creation fails ("out of memory") or ASan reports
# false errors inside libcuda unless protect_shadow_gap=0 and friends are set;
# nvcc also cannot instrument device code, and the CI machine has no GPU to run
# it on anyway. The CUDA side is checked with compute-sanitizer on the GPU
# machine (scripts/device/soak.sh). OpenCL runs for real on PoCL.
#
# CI budget (2 cores, 90 minutes for everything): measured on a 2-core machine
# shared with other builds, the ASan+UBSan build of the library and all tests
# takes about 10 minutes and the whole suite then runs in about 1.5 minutes on
# PoCL (docs/RELIABILITY.md has the per-suite figures), so every suite runs in
# full. SUBSET below is where a gtest filter goes should a suite grow too slow
# under ASan (e.g. [point_cloud_test]='-*Large*'); it is empty today.
# TSan builds only the stress test (the other suites are single-threaded).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD_ROOT="${BUILD_ROOT:-$ROOT}"
JOBS="${JOBS:-2}"
WHAT="${1:-all}"
SUPP="$ROOT/scripts"

# gtest filters for suites too slow under ASan (none today; see above). Ignored
# when SANITIZE_FULL=1.
declare -A SUBSET=()

log() { printf '\n== sanitize: %s ==\n' "$*"; }

configure() {  # configure <dir> <sanitizers>
  cmake -S "$ROOT" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DDEVICEARRAY_SANITIZE="$2" -DDEVICEARRAY_WITH_CUDA=OFF -DDEVICEARRAY_WITH_OPENCL=ON \
    -DDEVICEARRAY_BUILD_TESTS=ON -DDEVICEARRAY_BUILD_BENCHMARKS=OFF -DDEVICEARRAY_BUILD_EXAMPLES=OFF \
    -DDEVICEARRAY_BUILD_TOOLS=ON -DDEVICEARRAY_BUILD_PYTHON=OFF >/dev/null
}

# PoCL: two worker threads (CI has 2 cores), and a private kernel cache so runs
# under different sanitizers do not share compiled kernels.
export POCL_MAX_PTHREAD_COUNT="${POCL_MAX_PTHREAD_COUNT:-2}"

run_asan() {
  local dir="$BUILD_ROOT/build-asan"
  log "configure + build $dir (address,undefined)"
  configure "$dir" "address,undefined"
  local build_failed=0
  if [ "${SANITIZE_KEEP_GOING:-0}" = 1 ]; then
    cmake --build "$dir" -j "$JOBS" -- -k 0 || build_failed=1
  else
    cmake --build "$dir" -j "$JOBS"
  fi
  export POCL_CACHE_DIR="$dir/pocl-cache"
  # halt_on_error: the first report fails the run. detect_leaks: LSan on, with
  # suppressions only for third-party runtime internals (scripts/lsan.supp).
  # allocator_may_return_null=1: the tests ask for unallocatable host sizes on
  # purpose and expect Error(OutOfMemory) from the library's null check, which
  # ASan would otherwise pre-empt with an abort. detect_stack_use_after_return
  # is off because PoCL's work-group loops switch stacks in uninstrumented code,
  # which ASan's fake stacks mistake for returns.
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:strict_init_order=1:check_initialization_order=1:detect_stack_use_after_return=0:allocator_may_return_null=1"
  export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$SUPP/ubsan.supp"
  local failed=() t name filter start
  for t in "$dir"/tests/*_test; do
    [ -x "$t" ] || continue
    name="$(basename "$t")"
    filter="*"
    if [ "${SANITIZE_FULL:-0}" != 1 ] && [ -n "${SUBSET[$name]:-}" ]; then filter="${SUBSET[$name]}"; fi
    start=$SECONDS
    local ok=0
    (cd "$dir/tests" && "$t" --gtest_brief=1 --gtest_filter="$filter" >"$dir/$name.asan.log" 2>&1) && ok=1
    # LeakSanitizer's own stop-the-world tracer can crash at exit ("Tracer caught
    # signal 11", then "LeakSanitizer has encountered a fatal error"; an intermittent
    # upstream fault, google/sanitizers#1353): the leak check did not run and nothing
    # was found. Seen here once each in fault_injection_test and gpu_mat_nd_test, and
    # in every --gtest_brief=1 run of one build of pointcloud_normals_test, whose main
    # thread the tracer found with a stale dynamic-TLS range ("DTLS 9 at 0x864-..."
    # with LSAN_OPTIONS=verbosity=1) unless it printed every test
    # (docs/RELIABILITY.md). Such a run is repeated, at most twice (the second time
    # printing every test), and only when every test passed and no sanitizer
    # reported; any other failure fails the step.
    local attempt brief
    for attempt in 2 3; do
      [ $ok = 0 ] && grep -q "LeakSanitizer has encountered a fatal error" "$dir/$name.asan.log" &&
        grep -q '^\[  PASSED' "$dir/$name.asan.log" &&
        ! grep -qE "FAILED|ERROR: (Address|Leak)Sanitizer|runtime error:" "$dir/$name.asan.log" || break
      echo "  $name: LeakSanitizer's tracer crashed after the tests passed (no report); run $attempt"
      mv "$dir/$name.asan.log" "$dir/$name.asan.tool-crash-$((attempt - 1)).log"
      brief=1
      [ "$attempt" = 3 ] && brief=0
      (cd "$dir/tests" && "$t" --gtest_brief=$brief --gtest_filter="$filter" >"$dir/$name.asan.log" 2>&1) && ok=1
    done
    if [ $ok = 1 ]; then
      printf '  %-28s ok      %4ds  %s\n' "$name" $((SECONDS - start)) "$(grep -E '^\[  PASSED' "$dir/$name.asan.log" | tail -1)"
    else
      printf '  %-28s FAILED  %4ds  (log: %s)\n' "$name" $((SECONDS - start)) "$dir/$name.asan.log"
      tail -40 "$dir/$name.asan.log"
      failed+=("$name")
    fi
  done
  if [ ${#failed[@]} -gt 0 ]; then
    echo "sanitize: ASan/UBSan failures: ${failed[*]}"
    return 1
  fi
  if [ "$build_failed" = 1 ]; then
    echo "sanitize: some test targets did not build (see above)"
    return 1
  fi
}

run_tsan() {
  local dir="$BUILD_ROOT/build-tsan"
  log "configure + build $dir (thread): stress_test"
  configure "$dir" "thread"
  cmake --build "$dir" -j "$JOBS" --target stress_test
  export POCL_CACHE_DIR="$dir/pocl-cache"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:suppressions=$SUPP/tsan.supp"
  local start=$SECONDS
  if (cd "$dir/tests" && ./stress_test --gtest_brief=1 >"$dir/stress_test.tsan.log" 2>&1); then
    printf '  %-28s ok      %4ds  %s\n' stress_test $((SECONDS - start)) "$(grep -E '^\[  PASSED' "$dir/stress_test.tsan.log" | tail -1)"
  else
    printf '  %-28s FAILED  %4ds  (log: %s)\n' stress_test $((SECONDS - start)) "$dir/stress_test.tsan.log"
    tail -80 "$dir/stress_test.tsan.log"
    return 1
  fi
}

case "$WHAT" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all) run_asan; run_tsan ;;
  *) echo "usage: $0 [asan|tsan|all]" >&2; exit 2 ;;
esac
log "done"
