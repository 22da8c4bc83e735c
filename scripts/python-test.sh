#!/usr/bin/env bash
# Builds the devicearray Python module into the build tree and runs the pytest
# suite (tests/python) against it, in a virtual environment under the build tree.
#
#   scripts/python-test.sh [BUILD_DIR] [pytest args...]     (BUILD_DIR defaults to ./build)
#
# The venv (<BUILD_DIR>/python-venv) sees the system site-packages, so torch /
# cupy / jax installed for the system python are used by the interop tests; the
# tools that are missing (nanobind, numpy, pytest) are installed into it once.
# The staged package (<BUILD_DIR>/python/devicearray) is put on the venv's path
# with a .pth file: rebuilding updates it in place, no reinstall needed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
[ $# -gt 0 ] && shift
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
venv="$build/python-venv"
python="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
  echo "python-test: creating $venv"
  "$python" -m venv --system-site-packages "$venv"
fi
py="$venv/bin/python"
if ! "$py" -c "import nanobind, numpy, pytest" 2>/dev/null; then
  echo "python-test: installing nanobind, numpy, pytest into $venv"
  "$py" -m pip install -q nanobind numpy pytest
fi

generator=()
if [ ! -f "$build/CMakeCache.txt" ] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$root" -B "$build" "${generator[@]}" -DDEVICEARRAY_BUILD_PYTHON=ON -DPython_EXECUTABLE="$py" >/dev/null
cmake --build "$build" --target devicearray_python -j"${JOBS:-$(nproc)}"

site="$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$build/python" > "$site/devicearray-build-tree.pth"

cd "$root"
exec "$py" -m pytest -q -p no:cacheprovider "$root/tests/python" "$@"
