"""Zero-copy interop with PyTorch, CuPy and JAX on CUDA devices, the DLPack stream
handshake, lifetimes and leak checks. Skipped without a CUDA device or the library."""

import gc

import numpy as np
import pytest

import devicearray as da
from conftest import cuda_devices

pytestmark = pytest.mark.skipif(not cuda_devices(), reason="no CUDA device visible to devicearray")


def _import(name):
    try:
        return __import__(name)
    except Exception as e:  # noqa: BLE001 - any import failure means "not usable here"
        pytest.skip(f"{name} is not importable: {e}")


@pytest.fixture
def cuda_device():
    return cuda_devices()[0]


@pytest.fixture
def torch():
    torch = _import("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


def test_torch_from_dlpack_is_zero_copy_both_ways(cuda_device, torch):
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    arr = da.from_numpy(host, device=cuda_device)
    tensor = torch.from_dlpack(arr)
    assert tensor.data_ptr() == arr.get_device_ptr()
    assert tensor.device.index == cuda_device.ordinal()
    assert tuple(tensor.shape) == (3, 4) and tensor.stride() == (4, 1)
    tensor.add_(1)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(arr.to_numpy(), host + 1)  # torch's write is visible to us
    arr.upload(np.zeros((3, 4), np.float32))
    np.testing.assert_array_equal(tensor.cpu().numpy(), np.zeros((3, 4), np.float32))  # and ours to torch


def test_torch_tensor_into_devicearray_is_zero_copy(cuda_device, torch):
    tensor = torch.arange(24, dtype=torch.int16, device=f"cuda:{cuda_device.ordinal()}").reshape(2, 3, 4)
    arr = da.from_dlpack(tensor)
    assert arr.get_device_ptr() == tensor.data_ptr()
    np.testing.assert_array_equal(arr.to_numpy(), tensor.cpu().numpy())
    view = da.from_dlpack(tensor[:, 1:, :])
    np.testing.assert_array_equal(view.to_numpy(), tensor[:, 1:, :].cpu().numpy())


def test_stream_handshake_consumer_stream_sees_completed_data(cuda_device, torch):
    # Large enough that the library's copy is still running when torch enqueues its read.
    n = 1 << 24
    src = da.from_numpy(np.full(n, 3.0, np.float32), device=cuda_device)
    own = da.Stream(cuda_device)
    for _ in range(5):
        dst = src.clone(own)  # enqueued on our stream, no host sync
        consumer = torch.cuda.Stream(device=cuda_device.ordinal())
        with torch.cuda.stream(consumer):
            tensor = torch.from_dlpack(dst)  # torch passes `consumer` as the stream
            total = tensor.sum()
        consumer.synchronize()
        assert total.item() == pytest.approx(3.0 * n)


def test_lifetime_torch_tensor_outlives_our_array(cuda_device, torch):
    arr = da.from_numpy(np.arange(1000, dtype=np.float64), device=cuda_device)
    tensor = torch.from_dlpack(arr)
    del arr
    gc.collect()
    torch.cuda.synchronize()
    np.testing.assert_array_equal(tensor.cpu().numpy(), np.arange(1000, dtype=np.float64))


def test_device_array_formats_export_channels_last(cuda_device, torch):
    host = np.random.default_rng(1).uniform(size=(4, 5, 3)).astype(np.float32)
    arr = da.from_numpy(host, format=da.Format.PointXYZ, device=cuda_device)
    tensor = torch.from_dlpack(arr)
    assert tuple(tensor.shape) == (4, 5, 3)
    np.testing.assert_array_equal(tensor.cpu().numpy(), host)


def test_many_export_import_cycles_do_not_leak(cuda_device, torch):
    # free_memory() is the whole device's: run this without other processes on the GPU
    # (a compute-sanitizer run alongside moved it by 90 MB).
    arr = da.from_numpy(np.zeros((256, 256), np.float32), device=cuda_device)
    for _ in range(1000):  # warm up pools and caches
        torch.from_dlpack(arr)
        da.from_dlpack(arr)
    gc.collect()
    torch.cuda.synchronize()
    before = cuda_device.free_memory()
    for _ in range(100_000):
        t = torch.from_dlpack(arr)
        back = da.from_dlpack(t)
        del t, back
    gc.collect()
    torch.cuda.synchronize()
    after = cuda_device.free_memory()
    assert before - after < 16 << 20, f"device memory fell by {before - after} bytes"


def test_cupy_from_dlpack_and_cuda_array_interface(cuda_device):
    cupy = _import("cupy")
    host = np.arange(20, dtype=np.int32).reshape(4, 5)
    arr = da.from_numpy(host, device=cuda_device)
    with cupy.cuda.Device(cuda_device.ordinal()):
        a = cupy.from_dlpack(arr)
        b = cupy.asarray(arr)  # __cuda_array_interface__
        assert a.data.ptr == arr.get_device_ptr() == b.data.ptr
        a += 1
        cupy.cuda.runtime.deviceSynchronize()
    np.testing.assert_array_equal(arr.to_numpy(), host + 1)
    back = da.from_dlpack(b)
    assert back.get_device_ptr() == arr.get_device_ptr()


def test_cuda_array_interface_import_keeps_producer_alive(cuda_device):
    cupy = _import("cupy")

    class Wrapper:
        def __init__(self, x):
            self.x = x

        @property
        def __cuda_array_interface__(self):
            return self.x.__cuda_array_interface__

    with cupy.cuda.Device(cuda_device.ordinal()):
        x = cupy.arange(10, dtype=cupy.float32)
        ptr = x.data.ptr
        imported = da.from_dlpack(Wrapper(x))
        del x
        gc.collect()
        assert imported.get_device_ptr() == ptr
        np.testing.assert_array_equal(imported.to_numpy(), np.arange(10, dtype=np.float32))


def test_jax_from_dlpack_same_pointer(cuda_device):
    jax = _import("jax")
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        pytest.skip("jax has no GPU backend")
    if not gpus:
        pytest.skip("jax has no GPU backend")
    host = np.arange(8, dtype=np.float32)
    arr = da.from_numpy(host, device=cuda_device)
    x = jax.dlpack.from_dlpack(arr)
    np.testing.assert_array_equal(np.asarray(x), host)
    assert x.unsafe_buffer_pointer() == arr.get_device_ptr()


def test_stream_calls_capture_into_a_torch_cuda_graph(cuda_device, torch):
    """torch.cuda.graph (global capture mode) captures our stream calls on its stream;
    each replay recomputes from the input's memory, which the next frame rewrites."""
    rng = np.random.default_rng(11)
    h, w = 48, 64
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
    xyz = np.dstack([xs * 2.0, ys * 2.0, 500.0 + rng.uniform(-1, 1, (h, w))]).astype(np.float32)
    cloud = da.PointCloud(da.from_numpy(xyz, format=da.Format.PointXYZ, device=cuda_device))
    pose = np.array([[0, -1, 0, 10], [1, 0, 0, -20], [0, 0, 1, 5], [0, 0, 0, 1]], np.float32)
    shift = np.array([[1, 0, 0, 7], [0, 1, 0, 0], [0, 0, 1, -3], [0, 0, 0, 1]], np.float32)
    side = torch.cuda.Stream(device=cuda_device.ordinal())
    stream = da.Stream.wrap(cuda_device, side.cuda_stream)
    # Warm up outside the capture (kernels load, the pool grows), as for any captured code.
    cloud.downsampled(da.Downsampling.by2x2, stream=stream).transform(pose, stream=stream)
    torch.cuda.synchronize()

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        moved = cloud.downsampled(da.Downsampling.by2x2, stream=stream)
        moved.transform(pose, stream=stream)
        voxels = moved.to_unorganized_point_cloud(stream=stream).voxel_downsampled(8.0, 1, stream=stream)
    for frame in range(3):
        graph.replay()
        torch.cuda.synchronize()
        want = cloud.downsampled(da.Downsampling.by2x2).transformed(pose)
        np.testing.assert_array_equal(moved.device_points_xyz().to_numpy(), want.device_points_xyz().to_numpy(),
                                      err_msg=f"frame {frame}")
        # reread(): this launch's count, which every launch rewrites
        want_voxels = want.to_unorganized_point_cloud().voxel_downsampled(8.0, 1)
        np.testing.assert_array_equal(voxels.reread().device_points_xyz().to_numpy(),
                                      want_voxels.device_points_xyz().to_numpy(), err_msg=f"frame {frame}")
        cloud.transform(shift)  # the next frame, in the input's own memory
    del moved, voxels, graph
    gc.collect()
