#!/usr/bin/env bash
# Installs the Python package with `pip install .[test]` into a fresh virtual
# environment (the build tree is not on the path) and runs a smoke test on the
# default device from outside the source tree: import, the generated stubs, device
# list, a round trip, a point-cloud operation, DLPack to numpy.
#   scripts/pip-install-test.sh [VENV_DIR]     (default: build/pip-venv)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$root/build/pip-venv}"
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
start=$SECONDS
"$venv/bin/python" -m pip install -q "$root[test]"
echo "pip-install-test: pip install .[test] took $((SECONDS - start)) s"
cd "$(mktemp -d)"
"$venv/bin/python" - <<'PY'
import pathlib

import numpy as np
import pytest  # brought by the [test] extra

import devicearray as da

package = pathlib.Path(da.__file__).parent
assert "site-packages" in str(package), f"imported {package}, not the installed package"
for stub in ("_devicearray.pyi", "_testing.pyi", "py.typed", "batch.py", "dask.py"):
    assert (package / stub).is_file(), f"{stub} is missing from the wheel"
devices = da.ComputeDevice.all()
assert devices, "no device"
device = da.ComputeDevice.default_device()
host = np.arange(4 * 5 * 3, dtype=np.float32).reshape(4, 5, 3)
xyz = da.from_numpy(host, format=da.Format.PointXYZ, device=device)
assert np.array_equal(xyz.to_numpy(), host)
shift = np.eye(4, dtype=np.float32)
shift[:3, 3] = (1.0, 2.0, 3.0)
moved = da.PointCloud(xyz).transformed(shift).device_points_xyz().to_numpy()
assert np.allclose(moved, host + np.array([1.0, 2.0, 3.0], np.float32)), "transform"
assert np.array_equal(np.from_dlpack(xyz, device="cpu", copy=True), host)
print(f"pip-install-test: ok on {device} ({len(devices)} device(s), pytest {pytest.__version__})")
PY
