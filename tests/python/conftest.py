"""Shared fixtures: every test runs on each device devicearray sees (PoCL here,
CUDA and OpenCL on GPU machines)."""

import numpy as np
import pytest

import devicearray as da

DTYPES = [np.uint8, np.int8, np.uint16, np.int16, np.int32, np.float32, np.float64, np.float16]


def _devices():
    try:
        return da.ComputeDevice.all()
    except RuntimeError:
        return []


DEVICES = _devices()


@pytest.fixture(params=DEVICES, ids=[d.to_string().split(" ")[0] for d in DEVICES])
def device(request):
    return request.param


def cuda_devices():
    return [d for d in DEVICES if d.backend() == da.ComputeBackend.cuda]


def opencl_devices():
    return [d for d in DEVICES if d.backend() == da.ComputeBackend.opencl]


def reference(shape, dtype, seed=0):
    """Deterministic host data of every dtype, computed independently of the library."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-1000, 1000, size=shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
