"""GpuMatND / DeviceArray round trips through numpy, views, formats and errors."""

import numpy as np
import pytest

import devicearray as da
from conftest import DTYPES, reference

FORMATS = list(da.Format.__members__.values())


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4), (2, 1, 3, 5)])
def test_from_numpy_round_trip_keeps_shape_dtype_and_values(device, dtype, shape):
    host = reference(shape, dtype)
    arr = da.from_numpy(host, device=device)
    assert isinstance(arr, da.GpuMatND)
    assert arr.shape == shape  # the last axis is not folded into channels
    assert arr.channels() == 1
    assert arr.dtype == np.dtype(dtype)
    assert arr.device() == device
    itemsize = np.dtype(dtype).itemsize
    assert arr.strides_in_bytes == host.strides
    assert arr.strides == tuple(s // itemsize for s in host.strides)
    out = arr.to_numpy()
    np.testing.assert_array_equal(out, host)
    assert out.flags.writeable and out.flags.c_contiguous


def test_to_numpy_is_an_independent_copy(device):
    host = np.arange(12, dtype=np.int32).reshape(3, 4)
    arr = da.from_numpy(host, device=device)
    first = arr.to_numpy()
    first[:] = -1
    np.testing.assert_array_equal(arr.to_numpy(), host)


def test_non_contiguous_numpy_input_is_packed(device):
    base = np.arange(6 * 8, dtype=np.float32).reshape(6, 8)
    for view in (base[::2, 1:7], base.T, base[:, ::-1]):
        arr = da.from_numpy(view, device=device)
        assert arr.shape == view.shape
        np.testing.assert_array_equal(arr.to_numpy(), view)


def test_numpy_asarray_and_array_protocol(device):
    host = reference((4, 6), np.uint16)
    arr = da.from_numpy(host, device=device)
    np.testing.assert_array_equal(np.asarray(arr), host)
    np.testing.assert_array_equal(np.asarray(arr, dtype=np.float64), host.astype(np.float64))
    with pytest.raises(ValueError):
        np.asarray(arr, copy=False)


def test_numpy_from_dlpack_host_copy(device):
    host = reference((3, 4, 5), np.float32)
    arr = da.from_numpy(host, device=device)
    out = np.from_dlpack(arr, device="cpu", copy=True)
    np.testing.assert_array_equal(out, host)
    out[0, 0, 0] = 12345  # independent of the device array
    np.testing.assert_array_equal(arr.to_numpy(), host)


def test_slicing_gives_views_that_share_memory(device):
    host = np.arange(4 * 5 * 6, dtype=np.int16).reshape(4, 5, 6)
    arr = da.from_numpy(host, device=device)
    view = arr[1:3, :, 2:5]
    assert view.shape == (2, 5, 3)
    assert view.is_submatrix() and not view.is_continuous()
    assert view.strides_in_bytes == arr.strides_in_bytes  # views keep the parent's step
    np.testing.assert_array_equal(view.to_numpy(), host[1:3, :, 2:5])
    # Writing through the view changes the parent.
    view.upload(np.full((2, 5, 3), -7, dtype=np.int16))
    expected = host.copy()
    expected[1:3, :, 2:5] = -7
    np.testing.assert_array_equal(arr.to_numpy(), expected)


def test_integer_index_negative_index_ellipsis_and_clamping(device):
    host = np.arange(3 * 4 * 5, dtype=np.float64).reshape(3, 4, 5)
    arr = da.from_numpy(host, device=device)
    np.testing.assert_array_equal(arr[1].to_numpy(), host[1])
    np.testing.assert_array_equal(arr[-1, 1:3].to_numpy(), host[-1, 1:3])
    np.testing.assert_array_equal(arr[..., 2:].to_numpy(), host[..., 2:])
    np.testing.assert_array_equal(arr[:, :100].to_numpy(), host[:, :100])
    assert arr[1:2].shape == (1, 4, 5)


@pytest.mark.parametrize("key", [np.s_[::2], np.s_[:, ::-1], np.s_[5], np.s_[0, 0, 0, 0], np.s_[2:2]])
def test_invalid_indices_raise_index_error(device, key):
    arr = da.from_numpy(np.zeros((3, 4, 5), np.uint8), device=device)
    with pytest.raises(IndexError):
        arr[key]


def test_clone_is_continuous_and_independent(device):
    host = reference((5, 6), np.int8)
    arr = da.from_numpy(host, device=device)
    sub = arr[1:4, 2:5]
    copy = sub.clone()
    assert copy.is_continuous() and not copy.is_submatrix()
    np.testing.assert_array_equal(copy.to_numpy(), host[1:4, 2:5])
    copy.upload(np.zeros((3, 3), np.int8))
    np.testing.assert_array_equal(arr.to_numpy(), host)


def test_constructor_from_dtype_and_type_code(device):
    a = da.GpuMatND([2, 3], np.float32, device)
    assert a.shape == (2, 3) and a.type() == 5 and a.elem_size() == 4
    b = da.GpuMatND([2, 3], 16, device)  # CV_8UC3
    assert b.channels() == 3 and b.shape == (2, 3, 3) and b.strides == (9, 3, 1)
    b.upload(np.arange(18, dtype=np.uint8).reshape(2, 3, 3))  # channel axis folded in place
    assert b.channels() == 3
    np.testing.assert_array_equal(b.to_numpy(), np.arange(18, dtype=np.uint8).reshape(2, 3, 3))


def _format_host(fmt, shape):
    dtype = da.format_dtype(fmt)
    if dtype == np.uint8:
        return reference(shape, np.uint8, seed=3)
    return reference(shape, np.float32, seed=3)


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
def test_device_array_round_trip_for_every_format(device, fmt):
    c = da.format_channels(fmt)
    organized_shape = (3, 4, c) if c > 1 else (3, 4)
    host = _format_host(fmt, organized_shape)
    arr = da.from_numpy(host, format=fmt, device=device)
    assert isinstance(arr, da.DeviceArray)
    assert arr.format == fmt
    assert arr.shape == organized_shape
    assert arr.is_organized() and arr.height() == 3 and arr.width() == 4 and arr.size() == 12
    assert arr.size_in_bytes() == 12 * da.format_itemsize(fmt)
    itemsize = np.dtype(da.format_dtype(fmt)).itemsize
    expected_strides = (4 * c, c, 1) if c > 1 else (4, 1)
    assert arr.strides == expected_strides
    assert arr.strides_in_bytes == tuple(s * itemsize for s in expected_strides)
    np.testing.assert_array_equal(arr.to_numpy(), host)
    np.testing.assert_array_equal(np.asarray(arr), host)

    unorganized_shape = (9, c) if c > 1 else (9,)
    flat = _format_host(fmt, unorganized_shape)
    unorganized = da.from_numpy(flat, format=fmt, device=device)
    assert unorganized.shape == unorganized_shape and not unorganized.is_organized()
    np.testing.assert_array_equal(unorganized.to_numpy(), flat)


def test_device_array_format_mismatches_are_value_errors(device):
    with pytest.raises(ValueError):
        da.from_numpy(np.zeros((2, 3, 3), np.float64), format=da.Format.PointXYZ, device=device)
    with pytest.raises(ValueError):
        da.from_numpy(np.zeros((2, 3, 4), np.float32), format=da.Format.PointXYZ, device=device)
    with pytest.raises(ValueError):
        da.from_numpy(np.zeros((2, 3, 1), np.float32), format=da.Format.PointZ, device=device)


def test_device_array_conversion_matches_host_reference(device):
    rgba = reference((2, 3, 4), np.uint8, seed=5)
    arr = da.from_numpy(rgba, format=da.Format.ColorRGBA, device=device)
    bgr = arr.convert(da.Format.ColorBGR)
    assert bgr.format == da.Format.ColorBGR
    np.testing.assert_array_equal(bgr.to_numpy(), rgba[..., [2, 1, 0]])
    xyz = da.from_numpy(reference((5, 3), np.float32), format=da.Format.PointXYZ, device=device)
    xyzw = da.convert(xyz, da.Format.PointXYZW)
    expected = np.concatenate([xyz.to_numpy(), np.ones((5, 1), np.float32)], axis=1)
    np.testing.assert_array_equal(xyzw.to_numpy(), expected)
    with pytest.raises(ValueError):
        xyz.convert(da.Format.ColorRGBA)


def test_device_array_and_gpumatnd_share_memory(device):
    host = reference((2, 3, 3), np.float32)
    arr = da.from_numpy(host, format=da.Format.PointXYZ, device=device)
    mat = arr.to_gpu_mat_nd()
    assert mat.size == [2, 3] and mat.channels() == 3
    mat.upload(np.zeros((2, 3, 3), np.float32))
    np.testing.assert_array_equal(arr.to_numpy(), np.zeros((2, 3, 3), np.float32))
    back = da.DeviceArray.from_gpu_mat_nd(mat, da.Format.NormalXYZ)
    assert back.format == da.Format.NormalXYZ and back.shape == (2, 3, 3)


def test_stream_overloads_are_ordered(device):
    stream = da.Stream(device)
    host = reference((64, 64), np.float32)
    arr = da.from_numpy(host, device=device)
    copy = arr.clone(stream)
    stream.wait_for_completion()
    assert stream.query_if_complete()
    np.testing.assert_array_equal(copy.to_numpy(), host)
    da.synchronize_stream(stream)
    da.synchronize_stream(stream.handle(), device.backend())


def test_devices_and_streams_describe_themselves(device):
    assert device in da.ComputeDevice.all()
    assert device.total_memory() > 0
    assert str(device) == device.to_string()
    assert device.ordinal() >= 0
    assert isinstance(device.model(), str) and isinstance(device.vendor(), str)
    assert device.sdk_stream().handle() == device.native_stream_handle()
    stream = da.Stream(device)
    wrapped = da.Stream.wrap(device, stream.handle())
    assert wrapped.handle() == stream.handle() and wrapped.device() == device


def test_error_mapping(device):
    with pytest.raises(ValueError):
        da.GpuMatND([0, 3], np.float32, device)  # zero-length axis
    with pytest.raises(ValueError):
        da.GpuMatND([2, 3], np.int64, device)  # no such depth
    with pytest.raises(IndexError):
        da.GpuMatND([2**30, 2**30, 2**30], np.float64, device)  # byte count overflows
    with pytest.raises(MemoryError):
        da.GpuMatND([2**20, 2**20], np.float64, device)  # 8 TiB fits size_t but not the device
    with pytest.raises(IndexError):
        da.ComputeDevice.opencl(1000)
    with pytest.raises(RuntimeError):
        da.DeviceArray(da.Format.PointXYZ).device()  # empty: InvalidState
    with pytest.raises(ValueError):
        da.from_numpy(np.zeros((2, 0), np.float32), device=device)
