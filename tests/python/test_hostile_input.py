"""What careless or hostile callers pass at the Python boundary: odd numpy layouts,
host arrays that die while a copy is in flight, foreign stream numbers, malformed
DLPack producers, plain ints for enums, and objects shared between threads.

Cases that used to crash the interpreter run in a child process (run_isolated), so
a crash fails one test instead of ending the suite."""

import threading
import weakref

import numpy as np
import pytest

import devicearray as da
from conftest import DEVICE_COUNT, device_index, opencl_devices, reference, run_isolated

CHILD_PRELUDE = """
import gc, sys, numpy as np, devicearray as da
dev = da.ComputeDevice.all()[{index}]
"""


def child(device, body):
    return CHILD_PRELUDE.format(index=device_index(device)) + body


# ------------------------------------------------ numpy layouts (item 1, 19) --

ODD_LAYOUTS = {
    "x[None]": "np.arange(3, dtype=np.float32)[None]",
    "atleast_2d": "np.atleast_2d(np.arange(5, dtype=np.float32))",
    "img[..., None]": "np.arange(24, dtype=np.float32).reshape(4, 6)[..., None]",
    "ones((1, 5)).T": "np.arange(5, dtype=np.float32).reshape(1, 5).T",
    "matrix": "np.asarray(np.matrix([[1.0, 2.0, 3.0]], dtype=np.float32))",
    "broadcast": "np.broadcast_to(np.arange(4, dtype=np.float32), (3, 4))",
    "negative": "np.arange(12, dtype=np.float32).reshape(3, 4)[::-1, ::-1]",
    "unaligned view": "np.zeros(6, dtype=[('a', np.uint8), ('b', np.float32)])['b']",
}


@pytest.mark.parametrize("name", list(ODD_LAYOUTS))
def test_unusual_numpy_layouts_round_trip(device, name):
    out = run_isolated(child(device, f"""
host = {ODD_LAYOUTS[name]}
arr = da.from_numpy(host, device=dev)
assert arr.shape == host.shape, (arr.shape, host.shape)
np.testing.assert_array_equal(arr.to_numpy(), host)
target = da.GpuMatND()
target.upload(host)
np.testing.assert_array_equal(target.to_numpy(), host)
stream = da.Stream(dev)
target = da.GpuMatND([1], np.float32, dev)
target.upload(host, stream)
stream.wait_for_completion()
np.testing.assert_array_equal(target.to_numpy(), host)
print("ok")
"""))
    assert out.strip() == "ok"


def test_format_upload_of_a_length_one_axis_view(device):
    out = run_isolated(child(device, """
points = np.arange(12, dtype=np.float32).reshape(4, 3)
view = points[None]                      # (1, 4, 3): an organized 1 x 4 cloud
arr = da.from_numpy(view, format=da.Format.PointXYZ, device=dev)
assert arr.shape == (1, 4, 3)
np.testing.assert_array_equal(arr.to_numpy(), view)
print("ok")
"""))
    assert out.strip() == "ok"


@pytest.mark.parametrize("fmt", [da.Format.SNR, da.Format.PointZ])
def test_zero_dimensional_array_fits_no_format(device, fmt):
    with pytest.raises(ValueError, match="0-d"):
        da.from_numpy(np.array(1.0, dtype=np.float32), format=fmt, device=device)
    with pytest.raises(ValueError, match="0-d"):
        da.from_numpy(np.array(1.0, dtype=np.float32), device=device)


# ------------------------------------- host memory while a copy runs (2-4) --

def test_copy_to_host_refuses_non_contiguous_and_read_only_destinations(device):
    src = da.from_numpy(reference((6, 8), np.float32), format=da.Format.SNR, device=device)
    stream = da.Stream(device)
    wide = np.zeros((6, 16), np.float32)
    with pytest.raises(ValueError, match="C-contiguous"):
        src.copy_to_host(wide[:, ::2], stream)
    read_only = np.zeros((6, 8), np.float32)
    read_only.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        src.copy_to_host(read_only, stream)
    with pytest.raises(TypeError):
        src.copy_to_host("not an array", stream)
    assert not wide.any() and not read_only.any()


def test_copy_to_host_fills_the_array_and_keeps_it_alive(device):
    host = reference((6, 8), np.float32)
    src = da.from_numpy(host, format=da.Format.SNR, device=device)
    stream = da.Stream(device)
    dst = np.zeros((6, 8), np.float32)
    src.copy_to_host(dst, stream)
    stream.wait_for_completion()
    np.testing.assert_array_equal(dst, host)

    # Dropped by the caller before the copy ran: the library holds it until then.
    dst = np.zeros((6, 8), np.float32)
    alive = weakref.ref(dst)
    src.copy_to_host(dst, stream)
    del dst
    stream.wait_for_completion()
    assert alive() is None  # released once the copy has completed


def test_stream_upload_of_packed_temporaries_is_exact(device):
    out = run_isolated(child(device, """
stream = da.Stream(dev)
rng = np.random.default_rng(1)
wrong = 0
for i in range(60):
    base = rng.standard_normal((40, 80)).astype(np.float32)
    expected = base[:, ::2].copy()
    listed_expected = base[:3, :5].astype(np.float64)
    target = da.GpuMatND([40, 40], np.float32, dev)
    target.upload(base[:, ::2], stream)          # packed into a temporary
    listed = da.GpuMatND([3, 5], np.float64, dev)
    listed.upload(base[:3, :5].tolist(), stream)  # converted from a list
    del base
    gc.collect()
    np.empty((40, 80), np.float32).fill(7.0)     # reuse the freed memory, if it were freed
    stream.wait_for_completion()
    wrong += int((target.to_numpy() != expected).sum()) + int((listed.to_numpy() != listed_expected).sum())
print(wrong)
"""))
    assert int(out) == 0


def test_stream_upload_values_survive_the_temporary(device):
    stream = da.Stream(device)
    mismatches = 0
    for i in range(40):
        base = reference((32, 64), np.float32, seed=i)
        expected = base[:, ::2].copy()
        target = da.GpuMatND([32, 32], np.float32, device)
        target.upload(base[:, ::2], stream)
        del base
        stream.wait_for_completion()
        mismatches += int((target.to_numpy() != expected).sum())
    assert mismatches == 0


def test_exit_with_a_stream_upload_in_flight(device):
    for _ in range(3):
        run_isolated(child(device, """
frame = np.ones((512, 1024), np.float32)[:, ::2]
target = da.GpuMatND([512, 512], np.float32, dev)
stream = da.Stream(dev)
target.upload(frame, stream)
out = np.zeros((512, 512), np.float32)
da.from_numpy(np.ones((512, 512), np.float32), format=da.Format.SNR, device=dev).copy_to_host(out, stream)
"""))


# ------------------------------------------- stream numbers (item 5) --

@pytest.mark.parametrize("stream", [1, 2, 3, 4095, 4096, 65528, 2**70])
def test_opencl_export_refuses_cuda_stream_numbers(stream):
    for dev in opencl_devices():
        arr = da.from_numpy(np.zeros(4, np.float32), device=dev)
        with pytest.raises((BufferError, ValueError)):
            arr.__dlpack__(stream=stream)


@pytest.mark.parametrize("handle", [0, 1, 2, 7, 4096, 65528])
def test_wrapping_a_non_queue_on_opencl_is_refused(handle):
    for dev in opencl_devices():
        with pytest.raises(ValueError, match="cl_command_queue"):
            da.Stream.wrap(dev, handle)
        with pytest.raises(ValueError, match="cl_command_queue"):
            da.synchronize_stream(handle, da.ComputeBackend.opencl)


def test_stream_numbers_never_crash(device):
    out = run_isolated(child(device, """
arr = da.from_numpy(np.zeros(4, np.float32), device=dev)
refused = 0
for s in (1, 2, 3, 8, 4095, 4096, 65528, -2, 2**64, True, 1.5, "1"):
    try:
        arr.__dlpack__(stream=s)
    except (BufferError, ValueError, TypeError):
        refused += 1
print(refused)
"""))
    # On OpenCL every value is refused; on CUDA 1 and 2 are the default streams.
    expected = 12 if device.backend() == da.ComputeBackend.opencl else 10
    assert int(out) == expected


# ------------------------------------------- malformed producers (item 6) --

@pytest.mark.parametrize("reported", [(), [1, 0], None, (1,), ("a", 0), (1, 0, 0), (2**70, 0), (-1, 0)])
def test_from_dlpack_validates_dlpack_device(device, reported):
    out = run_isolated(child(device, f"""
class Producer:
    def __init__(self, inner): self.inner = inner
    def __dlpack__(self, **kwargs): return self.inner.__dlpack__(**kwargs)
    def __dlpack_device__(self): return {reported!r}
try:
    da.from_dlpack(Producer(da.from_numpy(np.zeros(4, np.float32), device=dev)))
except (TypeError, ValueError) as e:
    assert "__dlpack_device__" in str(e), str(e)
    print("refused")
"""))
    assert out.strip() == "refused"


@pytest.mark.parametrize("kwargs, error", [
    ({"copy": "yes"}, TypeError),
    ({"copy": 1}, TypeError),
    ({"max_version": (1,)}, ValueError),
    ({"max_version": [1, 0]}, TypeError),
    ({"max_version": ("1", 0)}, TypeError),
    ({"max_version": (-1, 0)}, ValueError),
    ({"dl_device": (1,)}, ValueError),
    ({"dl_device": ("cpu", 0)}, TypeError),
    ({"dl_device": (2**70, 0)}, ValueError),
])
def test_dlpack_export_validates_keywords(device, kwargs, error):
    arr = da.from_numpy(np.zeros(4, np.float32), device=device)
    with pytest.raises(error):
        arr.__dlpack__(**kwargs)


def test_huge_max_version_gives_a_versioned_capsule(device):
    arr = da.from_numpy(np.zeros(4, np.float32), device=device)
    capsule = arr.__dlpack__(max_version=(2**70, 0))
    assert da._testing.capsule_name(capsule) == "dltensor_versioned"
    assert da._testing.tensor_info(capsule)["version"][0] == 1


@pytest.mark.parametrize("interface, error", [
    ("not a dict", TypeError),
    ({"shape": (4,), "typestr": "<f4", "data": "junk", "version": 3}, TypeError),
    ({"shape": "abc", "typestr": "<f4", "data": (4096, False), "version": 3}, TypeError),
    ({"shape": (4,), "typestr": 5, "data": (4096, False), "version": 3}, TypeError),
    ({"shape": (4,), "typestr": "<f4", "data": (4096, "no"), "version": 3}, TypeError),
    ({"shape": (4,), "typestr": "<f4", "version": 3}, ValueError),
    ({"shape": (4,), "typestr": "<f4", "data": (4096, False), "strides": "x", "version": 3}, TypeError),
    ({"shape": (4,), "typestr": "<f4", "data": (4096, False), "stream": "s", "version": 3}, TypeError),
])
def test_from_dlpack_validates_cuda_array_interface(interface, error):
    out = run_isolated(f"""
import devicearray as da
class FakeInterface:
    __cuda_array_interface__ = {interface!r}
try:
    da.from_dlpack(FakeInterface())
except {error.__name__} as e:
    assert "__cuda_array_interface__" in str(e), str(e)
    print("refused")
""")
    assert out.strip() == "refused"


def test_numpy_view_with_an_unaligned_stride(device):
    view = np.zeros(6, dtype=[("a", np.uint8), ("b", np.float32)])["b"]
    view[:] = np.arange(6)
    assert view.strides[0] % view.itemsize != 0
    np.testing.assert_array_equal(da.from_numpy(view, device=device).to_numpy(), np.arange(6, dtype=np.float32))
    try:
        imported = da.from_dlpack(view, device=device)
    except BufferError:
        pass  # numpy refuses to export such strides
    else:
        np.testing.assert_array_equal(imported.to_numpy(), np.arange(6, dtype=np.float32))


def test_array_protocol_validates_copy(device):
    arr = da.from_numpy(np.arange(3, dtype=np.float32), device=device)
    with pytest.raises(TypeError):
        arr.__array__(copy="yes")
    np.testing.assert_array_equal(arr.__array__(copy=np.bool_(True)), np.arange(3, dtype=np.float32))


# ----------------------------------------- enums are not ints (item 8) --

def test_enum_parameters_refuse_plain_ints(device):
    with pytest.raises(TypeError):
        da.DeviceArray(3)
    with pytest.raises(TypeError):
        da.from_numpy(np.zeros(4, np.float32), format=2, device=device)
    with pytest.raises(TypeError):
        da.format_channels(0)
    arr = da.from_numpy(np.zeros((4, 3), np.float32), format=da.Format.PointXYZ, device=device)
    with pytest.raises(TypeError):
        arr.convert(1)
    xyz = da.from_numpy(np.zeros((4, 4, 3), np.float32), format=da.Format.PointXYZ, device=device)
    cloud = da.PointCloud(xyz)
    with pytest.raises(TypeError):
        cloud.downsampled(2)
    with pytest.raises(TypeError):
        da.synchronize_stream(0, 1)
    # The enums themselves still work.
    assert cloud.downsampled(da.Downsampling.by2x2).height() == 2
    assert da.DeviceArray(da.Format.SNR).format == da.Format.SNR


# --------------------------------------------- point clouds (item 7) --

@pytest.mark.parametrize("dtype", [np.uint8, np.bool_])
def test_point_cloud_host_mask(device, dtype):
    points = reference((4, 5, 3), np.float32)
    mask = (np.arange(20).reshape(4, 5) % 3 != 0).astype(dtype)
    cloud = da.PointCloud(da.from_numpy(points, format=da.Format.PointXYZ, device=device))
    expected = points.copy()
    expected[mask == 0] = np.nan
    np.testing.assert_array_equal(cloud.masked(mask).device_points_xyz().to_numpy(), expected)
    cloud.mask(mask)
    np.testing.assert_array_equal(cloud.device_points_xyz().to_numpy(), expected)
    with pytest.raises(ValueError, match="uint8 or bool"):
        cloud.mask(mask.astype(np.float32))
    with pytest.raises(ValueError, match="shape"):
        cloud.mask(mask.reshape(-1))


@pytest.mark.parametrize("matrix", [np.eye(3), np.arange(15), np.eye(4)[:3], [[1, 2], [3, 4]]])
def test_transform_refuses_matrices_that_are_not_4x4(device, matrix):
    cloud = da.PointCloud(da.from_numpy(np.zeros((2, 2, 3), np.float32), format=da.Format.PointXYZ, device=device))
    with pytest.raises(ValueError, match="4x4"):
        cloud.transformed(matrix)
    with pytest.raises(TypeError):
        cloud.transformed("identity")


# ------------------------------------------- one object, many threads (15) --

def run_concurrently(write, read, readers, seconds):
    """Calls write() in a loop on one thread and read() on `readers` threads for
    `seconds`; returns what read() reported (a list of problems)."""
    stop = threading.Event()
    problems = []

    def loop(step):
        while not stop.is_set():
            step(problems)

    threads = [threading.Thread(target=loop, args=(lambda _: write(),))]
    threads += [threading.Thread(target=loop, args=(read,)) for _ in range(readers)]
    for t in threads:
        t.start()
    threading.Event().wait(seconds)
    stop.set()
    for t in threads:
        t.join()
    return problems


def test_shared_gpu_mat_nd_is_never_seen_half_changed(device):
    small = np.arange(6, dtype=np.float32)
    large = np.arange(4 * 50, dtype=np.float32).reshape(4, 50)
    shared = da.from_numpy(small, device=device)
    flip = [False]

    def write():
        shared.release()
        shared.upload(large if flip[0] else small)
        flip[0] = not flip[0]

    def read(problems):
        try:
            seen = shared.to_numpy()
        except RuntimeError as e:  # the moment between release() and upload()
            if "empty" not in str(e):
                problems.append(repr(e))
            return
        except Exception as e:  # noqa: BLE001 - anything else is a torn read
            problems.append(repr(e))
            return
        if not (np.array_equal(seen, small) or np.array_equal(seen, large)):
            problems.append(f"torn read: shape {seen.shape}")

    assert run_concurrently(write, read, readers=3, seconds=1.5) == []


def test_shared_point_cloud_is_never_seen_half_changed(device):
    points = reference((8, 8, 3), np.float32)
    cloud = da.PointCloud(da.from_numpy(points, format=da.Format.PointXYZ, device=device))

    def read(problems):
        try:
            out = cloud.device_points_xyz().to_numpy()
            if out.shape != (8, 8, 3):
                problems.append(out.shape)
        except Exception as e:  # noqa: BLE001
            problems.append(repr(e))

    problems = run_concurrently(lambda: cloud.transform(np.eye(4, dtype=np.float32)), read, readers=1, seconds=1.0)
    assert problems == []
    np.testing.assert_allclose(cloud.device_points_xyz().to_numpy(), points, rtol=1e-6)


# ------------------------------------------- interpreter exit (item 18) --

def test_no_instance_is_leaked_at_exit():
    out = run_isolated("""
import numpy as np, devicearray as da
devices = da.ComputeDevice.all()
arrays = [da.from_numpy(np.zeros(4, np.float32), device=d) for d in devices]
streams = [da.Stream(d) for d in devices]
print(len(devices))
""")
    assert int(out) == DEVICE_COUNT


# --------------------------- headers and tensors that misdescribe their memory --

def test_gpu_mat_nd_flags_are_read_only(device):
    # The flags describe the memory (type, continuity); a new value would not change it,
    # and DeviceArray.from_gpu_mat_nd would have trusted it.
    m = da.GpuMatND([10], np.uint8, device)
    flags = m.flags
    with pytest.raises(AttributeError):
        m.flags = flags | 3 << 3  # claims four channels
    assert m.flags == flags


def test_copy_to_host_refuses_a_destination_of_another_type_or_size(device):
    host = reference((10, 3), np.float32)
    src = da.from_numpy(host, format=da.Format.PointXYZ, device=device)
    stream = da.Stream(device)
    for wrong in (np.zeros((10, 3), np.float64), np.zeros((10, 3), np.int32), np.zeros((9, 3), np.float32)):
        with pytest.raises(ValueError, match="dst holds"):
            src.copy_to_host(wrong, stream)
        stream.wait_for_completion()
        assert not wrong.any()  # nothing reinterpreted, nothing written
    # The same values in another shape, a larger buffer's start, and raw bytes are what
    # the copy gives.
    flat, larger, raw = np.zeros(30, np.float32), np.full((16, 3), -1, np.float32), np.zeros(120, np.uint8)
    src.copy_to_host(flat, stream)
    src.copy_to_host(larger, stream)
    src.copy_to_host(raw, stream)
    stream.wait_for_completion()
    np.testing.assert_array_equal(flat.reshape(10, 3), host)
    np.testing.assert_array_equal(larger[:10], host)
    assert (larger[10:] == -1).all()
    np.testing.assert_array_equal(raw.view(np.float32).reshape(10, 3), host)


def test_from_numpy_refuses_an_axis_too_long_before_packing_it(device):
    # A zero-stride view of 2^40 points: packing it first would ask numpy for 12 TiB.
    huge = np.lib.stride_tricks.as_strided(np.zeros(3, np.float32), shape=(2**40, 3), strides=(0, 4))
    for fmt in (None, da.Format.PointXYZ):
        with pytest.raises(IndexError, match="axis 0 has length 1099511627776"):
            da.from_numpy(huge, format=fmt, device=device) if fmt else da.from_numpy(huge, device=device)


def test_host_tensors_whose_extent_no_process_can_address_are_refused(device):
    out = run_isolated(child(device, """
import ctypes
class DLDevice(ctypes.Structure): _fields_ = [("type", ctypes.c_int32), ("id", ctypes.c_int32)]
class DLDataType(ctypes.Structure): _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]
class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]
DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
class Version(ctypes.Structure): _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]
class Managed(ctypes.Structure):
    _fields_ = [("version", Version), ("ctx", ctypes.c_void_p), ("deleter", DELETER), ("flags", ctypes.c_uint64),
                ("dl_tensor", DLTensor)]
new_capsule = ctypes.pythonapi.PyCapsule_New
new_capsule.restype, new_capsule.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
deleted = []
deleter = DELETER(lambda p: deleted.append(p))
keep = []
buf = np.arange(4, dtype=np.float32)

class Producer:
    # A kDLCPU float32 tensor over buf with the given shape, strides (elements) and byte offset.
    def __init__(self, shape, strides, byte_offset):
        shp = (ctypes.c_int64 * len(shape))(*shape)
        st = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        t = DLTensor(buf.ctypes.data, DLDevice(1, 0), len(shape), DLDataType(2, 32, 1),
                     ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64)),
                     None if st is None else ctypes.cast(st, ctypes.POINTER(ctypes.c_int64)), byte_offset)
        self.m = Managed(Version(1, 0), None, deleter, 0, t)
        keep.extend([shp, st, self.m])
    def __dlpack__(self, **kw): return new_capsule(ctypes.addressof(self.m), b"dltensor_versioned", None)
    def __dlpack_device__(self): return (1, 0)

for shape, strides, offset in (([2, 2], [2**60, 1], 0), ([4], None, 2**63), ([2**31 - 1, 2**31 - 1, 2**31 - 1], None, 0)):
    try:
        da.from_dlpack(Producer(shape, strides, offset), device=dev)
    except (IndexError, OverflowError, ValueError) as e:
        assert "addressable" in str(e), e
        print("refused", shape)
    else:
        raise SystemExit("accepted " + repr((shape, strides, offset)))
# The honest tensor over the same memory still imports.
got = da.from_dlpack(Producer([2, 2], [2, 1], 0), device=dev).to_numpy()
assert (got.reshape(-1) == buf).all(), got
print("deleters", len(deleted))
"""))
    assert out.count("refused") == 3, out
    assert "deleters 4" in out, out
