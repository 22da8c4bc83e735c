"""Shared fixtures: every test runs on each device devicearray sees (PoCL here,
CUDA and OpenCL on GPU machines)."""

import numpy as np
import pytest

import devicearray as da

DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32, np.float64, np.float16]


def devices():
    """Every device devicearray sees, as new handles. Nothing in the suite keeps
    ComputeDevice objects in module globals or pytest parameters: those live until the
    interpreter exits, and nanobind reports instances still alive then as leaks (on
    the GPU machine, with PyTorch loaded, pytest's own objects outlive the modules)."""
    try:
        return da.ComputeDevice.all()
    except RuntimeError:
        return []


# Names only, for the parametrization and its ids.
DEVICE_NAMES = [d.to_string().split(" ")[0] for d in devices()]
DEVICE_COUNT = len(DEVICE_NAMES)


@pytest.fixture(params=range(DEVICE_COUNT), ids=DEVICE_NAMES)
def device(request):
    return devices()[request.param]


def cuda_devices():
    return [d for d in devices() if d.backend() == da.ComputeBackend.cuda]


def opencl_devices():
    return [d for d in devices() if d.backend() == da.ComputeBackend.opencl]


def reference(shape, dtype, seed=0):
    """Deterministic host data of every dtype, computed independently of the library."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-1000, 1000, size=shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)


def device_index(device):
    """The position of `device` in ComputeDevice.all(), for a child process."""
    return devices().index(device)


def run_isolated(code, timeout=120):
    """Runs `code` in a fresh interpreter and returns its stdout. Cases that could
    crash the interpreter run here, so that a signal fails one test instead of
    ending the suite; the child prints what it checked and exits non-zero on
    failure. A child killed by a signal has a negative return code."""
    import os
    import subprocess
    import sys
    import textwrap

    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            timeout=timeout, env=dict(os.environ))
    assert result.returncode == 0, (f"child exited with {result.returncode} (negative = killed by that signal)\n"
                                    f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    assert "nanobind: leaked" not in result.stderr, result.stderr
    return result.stdout
