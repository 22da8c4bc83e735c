#!/usr/bin/env bash
# Builds the devicearray Python module into the build tree and runs the pytest
# suite (tests/python) against it, in a virtual environment under the build tree.
#
#   scripts/python-test.sh [BUILD_DIR] [pytest args...]     (BUILD_DIR defaults to ./build)
#
# $PYTHON (default python3) is used as is when it has nanobind, numpy and pytest
# (so torch / cupy / jax installed for it serve the interop tests); otherwise a
# venv (<BUILD_DIR>/python-venv, seeing the system site-packages) gets them once,
# with dask and distributed for the batch tests.
# The tests import the package staged in <BUILD_DIR>/python/devicearray, which
# every rebuild updates in place.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
[ $# -gt 0 ] && shift
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
venv="$build/python-venv"
python="${PYTHON:-python3}"

if "$python" -c "import nanobind, numpy, pytest" 2>/dev/null; then
  # Everything is already there (e.g. GPU machines without a package registry,
  # where torch/cupy/jax sit in the user site that a venv would hide): use it.
  py="$(command -v "$python")"
else
  if [ ! -x "$venv/bin/python" ]; then
    echo "python-test: creating $venv"
    "$python" -m venv --system-site-packages "$venv"
  fi
  py="$venv/bin/python"
  if ! "$py" -c "import nanobind, numpy, pytest" 2>/dev/null; then
    echo "python-test: installing nanobind, numpy, pytest into $venv"
    "$py" -m pip install -q nanobind numpy pytest
  fi
  # The batch tests (test_dask_batch.py) need Dask; they skip, saying so, without it.
  if ! "$py" -c "import dask, distributed" 2>/dev/null; then
    echo "python-test: installing dask, distributed into $venv"
    "$py" -m pip install -q dask distributed || echo "python-test: could not install Dask: the batch tests skip"
  fi
fi

generator=()
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$root" -B "$build" "${generator[@]}" -DDEVICEARRAY_BUILD_PYTHON=ON -DPython_EXECUTABLE="$py" >/dev/null
cmake --build "$build" --target devicearray_python -j"${JOBS:-$(nproc)}"

cd "$root"
export PYTHONPATH="$build/python${PYTHONPATH:+:$PYTHONPATH}"
# nanobind reports objects still alive when the module is torn down (a leak) on
# stderr after pytest has finished; such a report fails the run.
stderr_log="$(mktemp)"
trap 'rm -f "$stderr_log"' EXIT
status=0
"$py" -m pytest -q -p no:cacheprovider "$root/tests/python" "$@" 2> >(tee "$stderr_log" >&2) || status=$?
wait  # for tee
if grep -q "nanobind: leaked" "$stderr_log"; then
  echo "python-test: nanobind reported leaked objects at interpreter exit (above): failing the run" >&2
  [ "$status" -ne 0 ] || status=1
fi
exit "$status"
