"""`.to(device)` of arrays and point clouds between two devices: every pair of distinct
devices devicearray sees, and each OpenCL device with a second context of its own
(ComputeDevice.from_opencl), which cannot share its memory with the first."""

import ctypes
import ctypes.util

import numpy as np
import pytest

import devicearray as da
from conftest import devices

CL_CONTEXT_DEVICES = 0x1081
CL_DEVICE_PLATFORM = 0x1031
CL_CONTEXT_PLATFORM = 0x1084
CL_QUEUE_PROFILING_ENABLE = 1 << 1


def opencl_library():
    try:
        return ctypes.CDLL("libOpenCL.so.1")
    except OSError:
        return None


def second_context(device):
    """`device` (OpenCL) opened once more in a context and queue of its own, or None."""
    cl = opencl_library()
    if cl is None:
        return None
    context = ctypes.c_void_p(device.native_context())
    cl_device = ctypes.c_void_p()
    if cl.clGetContextInfo(context, CL_CONTEXT_DEVICES, ctypes.sizeof(cl_device), ctypes.byref(cl_device), None):
        return None
    platform = ctypes.c_void_p()
    cl.clGetDeviceInfo(cl_device, CL_DEVICE_PLATFORM, ctypes.sizeof(platform), ctypes.byref(platform), None)
    props = (ctypes.c_ssize_t * 3)(CL_CONTEXT_PLATFORM, platform.value or 0, 0)
    err = ctypes.c_int(0)
    cl.clCreateContext.restype = ctypes.c_void_p
    cl.clCreateCommandQueue.restype = ctypes.c_void_p
    ctx = cl.clCreateContext(props, 1, ctypes.byref(cl_device), None, None, ctypes.byref(err))
    if err.value != 0 or not ctx:
        return None
    queue = cl.clCreateCommandQueue(ctypes.c_void_p(ctx), cl_device, ctypes.c_uint64(CL_QUEUE_PROFILING_ENABLE),
                                    ctypes.byref(err))
    twin = None
    if err.value == 0 and queue:
        twin = da.ComputeDevice.from_opencl(ctx, cl_device.value, queue)  # retains both
        cl.clReleaseCommandQueue(ctypes.c_void_p(queue))
    cl.clReleaseContext(ctypes.c_void_p(ctx))
    return twin


def pairs():
    """(name, index of the source among devices(), index of the destination or None for
    the source's second context)."""
    all_devices = devices()
    out = [(f"{a}-to-{b}", a, b) for a in range(len(all_devices)) for b in range(len(all_devices)) if a != b]
    out += [(f"{i}-to-second-context", i, None) for i, d in enumerate(all_devices)
            if d.backend() == da.ComputeBackend.opencl]
    out += [(f"second-context-to-{i}", None, i) for i, d in enumerate(all_devices)
            if d.backend() == da.ComputeBackend.opencl]
    return out


PAIRS = pairs()


@pytest.fixture(params=PAIRS, ids=[p[0] for p in PAIRS])
def source_and_destination(request):
    _, a, b = request.param
    all_devices = devices()
    if a is None or b is None:
        twin = second_context(all_devices[b if a is None else a])
        if twin is None:
            pytest.skip("no second OpenCL context could be made on this device")
        return (twin, all_devices[b]) if a is None else (all_devices[a], twin)
    return all_devices[a], all_devices[b]


if not PAIRS:
    pytest.skip("one device and no OpenCL device to open twice", allow_module_level=True)


def test_gpumatnd_to_copies_a_strided_view(source_and_destination):
    source, destination = source_and_destination
    host = np.arange(4 * 5 * 6 * 3, dtype=np.float32).reshape(4, 5, 6, 3)
    array = da.from_numpy(host, device=source)
    view = array[1:4, :, 2:5, 1:]
    assert not view.is_continuous()
    moved = view.to(destination)
    assert moved.device() == destination and moved.is_continuous()
    np.testing.assert_array_equal(moved.to_numpy(), host[1:4, :, 2:5, 1:])
    assert view.to(source).device() == source  # already there: the same memory

    target = da.GpuMatND([3, 5, 3, 2], np.float32, destination)
    view.copy_to(target)
    np.testing.assert_array_equal(target.to_numpy(), host[1:4, :, 2:5, 1:])


def test_device_arrays_and_point_clouds_move(source_and_destination):
    source, destination = source_and_destination
    xyz = np.arange(6 * 7 * 3, dtype=np.float32).reshape(6, 7, 3) + 500
    xyz[2, 3] = np.nan
    array = da.from_numpy(xyz, format=da.Format.PointXYZ, device=source)
    moved = array.to(destination)
    assert moved.device() == destination and moved.format == da.Format.PointXYZ
    np.testing.assert_array_equal(moved.to_numpy(), xyz)

    cloud = da.PointCloud(array)
    shift = np.eye(4, dtype=np.float32)
    shift[:3, 3] = (1, 2, 3)
    cloud.transform(shift)
    there = cloud.to(destination)
    assert there.device() == destination
    np.testing.assert_array_equal(there.transformation_matrix(), cloud.transformation_matrix())
    np.testing.assert_array_equal(there.device_points_xyz().to_numpy(), cloud.device_points_xyz().to_numpy())

    points = cloud.to_unorganized_point_cloud()
    points_there = points.to(destination)
    assert points_there.device() == destination and points_there.size() == points.size()
    np.testing.assert_array_equal(points_there.device_points_xyz().to_numpy(), points.device_points_xyz().to_numpy())
