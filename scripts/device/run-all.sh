#!/usr/bin/env bash
# Builds devicearray on the GPU machine and runs everything that needs CUDA:
# the whole test suite (CUDA + every OpenCL platform), compute-sanitizer over the
# CUDA tests, the benchmarks, and the Python device tests. Logs go to $OUT.
#   scripts/device/run-all.sh [steps...]   steps: build test sanitize bench python (default: all)
set -uo pipefail
OUT="${OUT:-/tmp/devicearray-out}"
mkdir -p "$OUT"
BUILD="${BUILD:-build-device}"
steps="${*:-build test sanitize bench python}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# The NVIDIA OpenCL driver is installed with the CUDA driver; register its ICD when
# the image lists only PoCL, so both platforms are enumerated.
if [ ! -e /etc/OpenCL/vendors/nvidia.icd ]; then
  for lib in /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1; do
    if [ -e "$lib" ]; then echo "$lib" > /etc/OpenCL/vendors/nvidia.icd; break; fi
  done
fi
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv; clinfo -l; } > "$OUT/machine.txt" 2>&1

run_step() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
status=0

if run_step build; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DDEVICEARRAY_BUILD_PYTHON=${DEVICEARRAY_BUILD_PYTHON:-OFF} > "$OUT/configure.log" 2>&1 || status=1
  cmake --build "$BUILD" -j16 > "$OUT/build.log" 2>&1 || { status=1; tail -40 "$OUT/build.log"; }
  echo "build: $(tail -1 "$OUT/build.log")"
fi

if run_step test; then
  ctest --test-dir "$BUILD" --output-on-failure -j4 --timeout 600 > "$OUT/ctest.log" 2>&1 || status=1
  grep -E "tests passed|tests failed|Failed|\*\*\*" "$OUT/ctest.log" | tail -30
fi

if run_step sanitize; then
  : > "$OUT/sanitizer.log"
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck synccheck initcheck}; do
    for t in ${SANITIZE_TESTS:-"$BUILD"/tests/*_test}; do
      [ -x "$t" ] || continue
      # Only the CUDA instances: OpenCL drivers are outside compute-sanitizer's scope.
      timeout "${SANITIZE_TIMEOUT:-900}" compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 "$t" --gtest_brief=1 \
          --gtest_filter='*cuda*:*Cuda*:*CUDA*' >> "$OUT/sanitizer.log" 2>&1
      rc=$?
      echo "sanitizer $tool $(basename "$t"): rc=$rc" | tee -a "$OUT/sanitizer-summary.txt"
      [ $rc -eq 0 ] || status=1
    done
  done
fi

if run_step bench; then
  for b in "$BUILD"/bench/*_bench; do
    [ -x "$b" ] || continue
    "$b" --benchmark_min_time=${BENCH_MIN_TIME:-0.2} --benchmark_filter="${BENCH_FILTER:-.}" --benchmark_format=json --benchmark_out="$OUT/$(basename "$b").json" \
        > "$OUT/$(basename "$b").txt" 2>&1 || status=1
  done
fi

if run_step python; then
  if [ -x scripts/python-test.sh ]; then scripts/python-test.sh "$BUILD" > "$OUT/python.log" 2>&1 || status=1; tail -5 "$OUT/python.log"; fi
fi
exit $status
