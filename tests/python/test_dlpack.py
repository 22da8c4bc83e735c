"""DLPack capsule protocol details (__dlpack__, from_dlpack, versioned capsules, host
copies) on every device."""

import gc

import numpy as np
import pytest

import devicearray as da
import devicearray._testing as t
from conftest import reference

kDLCPU, kDLCUDA, kDLOpenCL = 1, 2, 4
IS_COPIED = 1 << 1


def own_device_tuple(arr):
    d = arr.device()
    return (kDLCUDA if d.backend() == da.ComputeBackend.cuda else kDLOpenCL, d.ordinal())


def test_dlpack_device_names_the_backend_and_ordinal(device):
    arr = da.from_numpy(np.zeros((2, 3), np.float32), device=device)
    assert arr.__dlpack_device__() == own_device_tuple(arr)


@pytest.mark.parametrize("max_version", [(1, 0), (1, 1), (1, 7), (2, 0)])
def test_versioned_capsule_for_major_at_least_one(device, max_version):
    arr = da.from_numpy(reference((2, 3, 4), np.int16), device=device)
    cap = arr.__dlpack__(max_version=max_version)
    assert t.capsule_name(cap) == "dltensor_versioned"
    info = t.tensor_info(cap)
    assert info["version"][0] == 1
    assert info["flags"] == 0  # zero-copy: neither READ_ONLY nor IS_COPIED
    assert info["shape"] == (2, 3, 4) and info["strides"] == (12, 4, 1)
    assert info["dtype"] == (0, 16, 1)  # kDLInt, 16 bits, 1 lane
    assert info["device"] == own_device_tuple(arr)


@pytest.mark.parametrize("max_version", [None, (0, 8)])
def test_legacy_capsule_without_versioned_support(device, max_version):
    arr = da.from_numpy(np.zeros(5, np.uint8), device=device)
    cap = arr.__dlpack__(max_version=max_version)
    assert t.capsule_name(cap) == "dltensor"


def test_multichannel_array_exports_channels_as_last_axis(device):
    host = reference((3, 4, 3), np.float32)
    arr = da.from_numpy(host, format=da.Format.PointXYZ, device=device)
    info = t.tensor_info(arr.__dlpack__(max_version=(1, 0)))
    assert info["shape"] == (3, 4, 3) and info["strides"] == (12, 3, 1) and info["dtype"] == (2, 32, 1)


def test_view_export_keeps_parent_strides(device):
    host = np.arange(5 * 6, dtype=np.float32).reshape(5, 6)
    view = da.from_numpy(host, device=device)[1:4, 2:5]
    info = t.tensor_info(view.__dlpack__(max_version=(1, 0)))
    assert info["shape"] == (3, 3) and info["strides"] == (6, 1)
    back = da.from_dlpack(view)
    np.testing.assert_array_equal(back.to_numpy(), host[1:4, 2:5])


def test_consumer_renames_capsule_and_deleter_runs_once_when_import_goes(device):
    arr = da.from_numpy(reference((4, 4), np.float32), device=device)
    for max_version, name in (((1, 0), "dltensor_versioned"), (None, "dltensor")):
        t.reset_deleter_calls()
        cap = arr.__dlpack__(max_version=max_version)
        t.count_deleter_calls(cap)
        imported = da.from_dlpack(cap)
        assert t.capsule_name(cap) == "used_" + name
        np.testing.assert_array_equal(imported.to_numpy(), arr.to_numpy())
        del cap
        gc.collect()
        assert t.deleter_calls() == 0  # the import still uses the memory
        view = imported[1:3]
        del imported
        gc.collect()
        assert t.deleter_calls() == 0  # so does a view of it
        del view
        gc.collect()
        assert t.deleter_calls() == 1


def test_unconsumed_capsule_runs_deleter_once_on_destruction(device):
    arr = da.from_numpy(np.ones(8, np.int32), device=device)
    for max_version in ((1, 0), None):
        t.reset_deleter_calls()
        cap = arr.__dlpack__(max_version=max_version)
        t.count_deleter_calls(cap)
        del cap
        gc.collect()
        assert t.deleter_calls() == 1


def test_reused_capsule_is_refused(device):
    arr = da.from_numpy(np.ones(8, np.int32), device=device)
    cap = arr.__dlpack__(max_version=(1, 0))
    da.from_dlpack(cap)
    with pytest.raises(BufferError):
        da.from_dlpack(cap)


def test_newer_major_version_is_refused_and_deleter_runs_once(device):
    arr = da.from_numpy(np.ones(8, np.int32), device=device)
    t.reset_deleter_calls()
    cap = arr.__dlpack__(max_version=(1, 0))
    t.count_deleter_calls(cap)
    t.set_version(cap, 2, 0)
    with pytest.raises(BufferError):
        da.from_dlpack(cap)
    assert t.capsule_name(cap) == "used_dltensor_versioned"
    del cap
    gc.collect()
    assert t.deleter_calls() == 1


def test_read_only_tensor_is_refused(device):
    arr = da.from_numpy(np.ones(8, np.int32), device=device)
    cap = arr.__dlpack__(max_version=(1, 0))
    t.set_flags(cap, 1)  # READ_ONLY
    with pytest.raises(BufferError):
        da.from_dlpack(cap)


def test_host_copy_export(device):
    host = reference((3, 5), np.uint16)
    arr = da.from_numpy(host, device=device)
    for copy in (None, True):
        cap = arr.__dlpack__(max_version=(1, 0), dl_device=(kDLCPU, 0), copy=copy)
        info = t.tensor_info(cap)
        assert info["device"] == (kDLCPU, 0)
        assert info["flags"] & IS_COPIED
    with pytest.raises(BufferError):
        arr.__dlpack__(max_version=(1, 0), dl_device=(kDLCPU, 0), copy=False)
    with pytest.raises(BufferError):
        arr.__dlpack__(max_version=(1, 0), dl_device=(kDLCUDA, 99))


def test_device_copy_export_is_flagged_and_independent(device):
    host = reference((4, 4), np.float32)
    arr = da.from_numpy(host, device=device)
    cap = arr.__dlpack__(max_version=(1, 0), copy=True)
    assert t.tensor_info(cap)["flags"] & IS_COPIED
    copy = da.from_dlpack(cap)
    copy.upload(np.zeros((4, 4), np.float32))
    np.testing.assert_array_equal(arr.to_numpy(), host)


def test_same_device_dl_device_is_zero_copy(device):
    arr = da.from_numpy(np.ones((2, 2), np.float32), device=device)
    cap = arr.__dlpack__(max_version=(1, 0), dl_device=arr.__dlpack_device__())
    assert t.tensor_info(cap)["flags"] == 0


def test_from_dlpack_of_objects_is_zero_copy(device):
    host = reference((3, 4), np.int32)
    arr = da.from_numpy(host, device=device)
    imported = da.from_dlpack(arr)
    imported.upload(np.full((3, 4), 9, np.int32))  # writes into arr's memory
    np.testing.assert_array_equal(arr.to_numpy(), np.full((3, 4), 9, np.int32))
    copied = da.from_dlpack(arr, copy=True)
    copied.upload(np.zeros((3, 4), np.int32))
    np.testing.assert_array_equal(arr.to_numpy(), np.full((3, 4), 9, np.int32))


def test_from_dlpack_of_host_producers_copies(device):
    host = reference((2, 3, 4), np.float64)
    imported = da.from_dlpack(host, device=device)  # numpy is a kDLCPU producer
    assert imported.device() == device
    np.testing.assert_array_equal(imported.to_numpy(), host)
    with pytest.raises(BufferError):
        da.from_dlpack(host, device=device, copy=False)


class LegacyProducer:
    """A pre-1.0 producer whose __dlpack__ accepts only `stream`."""

    def __init__(self, arr):
        self.arr = arr
        self.calls = []

    def __dlpack__(self, stream=None):
        self.calls.append(stream)
        return self.arr.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.arr.__dlpack_device__()


def test_from_dlpack_falls_back_for_old_producers(device):
    host = reference((5,), np.float32)
    producer = LegacyProducer(da.from_numpy(host, device=device))
    imported = da.from_dlpack(producer)
    np.testing.assert_array_equal(imported.to_numpy(), host)
    assert len(producer.calls) == 1


def test_from_dlpack_rejects_other_objects():
    with pytest.raises(TypeError):
        da.from_dlpack(42)


def test_cuda_array_interface_is_absent_on_opencl(device):
    arr = da.from_numpy(np.zeros((2, 2), np.float32), device=device)
    if device.backend() == da.ComputeBackend.opencl:
        assert not hasattr(arr, "__cuda_array_interface__")
        with pytest.raises(AttributeError):
            arr.__cuda_array_interface__
    else:
        cai = arr.__cuda_array_interface__
        assert cai["version"] == 3 and cai["shape"] == (2, 2) and cai["typestr"] == "<f4"
        assert cai["data"][0] == arr.get_device_ptr()


def test_empty_array_cannot_be_exported():
    with pytest.raises(BufferError):
        da.GpuMatND().__dlpack__()


def test_bad_stream_arguments(device):
    arr = da.from_numpy(np.zeros(3, np.float32), device=device)
    with pytest.raises(TypeError):
        arr.__dlpack__(stream="default")
    if device.backend() == da.ComputeBackend.cuda:
        with pytest.raises(ValueError):
            arr.__dlpack__(stream=0)
    cap = arr.__dlpack__(stream=-1, max_version=(1, 0))  # "no synchronization" is always allowed
    assert t.capsule_name(cap) == "dltensor_versioned"
