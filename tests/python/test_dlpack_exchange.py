"""The DLPack C exchange API (`__dlpack_c_exchange_api__`, DLPack 1.3): the table our
array types publish, from_dlpack's use of a producer's table, malformed tables and
failing producers (through a configurable fake table), and the stream rules."""

import gc

import numpy as np
import pytest

import devicearray as da
import devicearray._testing as t
from conftest import cuda_devices, reference

kDLCPU, kDLCUDA, kDLOpenCL = 1, 2, 4
kDLInt, kDLFloat, kDLBool = 0, 2, 6


def own_device_tuple(arr):
    d = arr.device()
    return (kDLCUDA if d.backend() == da.ComputeBackend.cuda else kDLOpenCL, d.ordinal())


def api():
    return da.GpuMatND.__dlpack_c_exchange_api__


def fake_producer_type(capsule, with_dlpack=False):
    """A new producer type (so the per-type cache starts fresh) whose instances stand
    for `array`; its table exports `array` through ours, with counted deleters."""

    class FakeProducer:
        def __init__(self, array):
            self.array = array
            self.dlpack_calls = 0

    FakeProducer.__dlpack_c_exchange_api__ = capsule
    if with_dlpack:
        def __dlpack__(self, **kwargs):
            self.dlpack_calls += 1
            return self.array.__dlpack__(**kwargs)

        FakeProducer.__dlpack__ = __dlpack__
        FakeProducer.__dlpack_device__ = lambda self: self.array.__dlpack_device__()
    return FakeProducer


def assert_released_once_when_dropped(handles):
    """`handles` holds the only handles to an imported tensor: its producer's deleter
    has not run while they live and runs once when they go."""
    gc.collect()
    assert t.deleter_calls() == 0
    handles.clear()
    gc.collect()
    assert t.deleter_calls() == 1


@pytest.fixture(autouse=True)
def fresh_fake():
    t.set_fake_exchange()
    t.reset_deleter_calls()
    yield
    t.set_fake_exchange()
    gc.collect()


# ------------------------------------------------------------------ producer ----

def test_every_array_type_publishes_one_versioned_table(device):
    arr = da.from_numpy(np.zeros((2, 3, 3), np.float32), format=da.Format.PointXYZ, device=device)
    capsules = {id(type(arr).__dlpack_c_exchange_api__), id(type(arr.to_gpu_mat_nd()).__dlpack_c_exchange_api__)}
    assert len(capsules) == 1
    assert t.capsule_name(api()) == "dlpack_exchange_api"
    info = t.exchange_api_info(api())
    assert info["version"] == (1, 3) and not info["prev_api"]
    assert info["managed_tensor_allocator"] and info["managed_tensor_from_py_object_no_sync"]
    assert info["managed_tensor_to_py_object_no_sync"] and info["current_work_stream"]
    assert not info["dltensor_from_py_object_no_sync"]  # not offered


def test_from_py_object_exports_what_dlpack_exports(device):
    for arr in (da.from_numpy(reference((2, 3, 4), np.int16), device=device),
                da.from_numpy(reference((3, 4, 3), np.float32), format=da.Format.PointXYZ, device=device)):
        info = t.tensor_info(t.exchange_from_py_object(api(), arr))
        expected = t.tensor_info(arr.__dlpack__(max_version=(1, 3)))
        assert info["version"] == (1, 3) and info["flags"] == 0
        for key in ("shape", "strides", "dtype", "device", "data", "byte_offset"):
            assert info[key] == expected[key], key


def test_from_py_object_refuses_other_objects_and_empty_arrays():
    with pytest.raises(TypeError, match="GpuMatND or DeviceArray"):
        t.exchange_from_py_object(api(), object())
    with pytest.raises(BufferError, match="empty"):
        t.exchange_from_py_object(api(), da.GpuMatND())


def test_to_py_object_wraps_the_tensor_and_runs_its_deleter_once(device):
    arr = da.from_numpy(reference((4, 5), np.float32), device=device)
    cap = t.exchange_from_py_object(api(), arr)
    t.count_deleter_calls(cap)
    back = [t.exchange_to_py_object(api(), cap)]
    assert isinstance(back[0], da.GpuMatND)
    np.testing.assert_array_equal(back[0].to_numpy(), arr.to_numpy())
    assert_released_once_when_dropped(back)


def test_to_py_object_failure_still_runs_the_deleter(device):
    cap = t.exchange_from_py_object(api(), da.from_numpy(np.zeros(4, np.float32), device=device))
    t.set_flags(cap, 1)  # READ_ONLY: refused
    t.count_deleter_calls(cap)
    with pytest.raises(BufferError, match="READ_ONLY|read-only"):
        t.exchange_to_py_object(api(), cap)
    assert t.deleter_calls() == 1


def test_current_work_stream(device):
    assert t.exchange_current_work_stream(api(), kDLCPU, 0) == 0
    with pytest.raises(BufferError, match="OpenCL"):
        t.exchange_current_work_stream(api(), kDLOpenCL, 0)
    with pytest.raises(BufferError, match="device type 99"):
        t.exchange_current_work_stream(api(), 99, 0)
    if device.backend() == da.ComputeBackend.cuda:
        assert t.exchange_current_work_stream(api(), kDLCUDA, device.ordinal()) == device.native_stream_handle()


def test_allocator_makes_a_tensor_of_the_prototype(device):
    kind, ordinal = own_device_tuple(da.from_numpy(np.zeros(1, np.uint8), device=device))
    cap = t.exchange_allocate(api(), [3, 4], kDLInt, 16, kind, ordinal)
    info = t.tensor_info(cap)
    assert info["shape"] == (3, 4) and info["dtype"] == (kDLInt, 16, 1) and info["device"] == (kind, ordinal)
    arr = da.from_dlpack(cap)
    arr.upload(reference((3, 4), np.int16))
    np.testing.assert_array_equal(arr.to_numpy(), reference((3, 4), np.int16))


@pytest.mark.parametrize("shape, code, bits, device_type, kind", [
    ([2, 2], kDLBool, 8, None, "BufferError"),
    ([], kDLFloat, 32, None, "ValueError"),
    ([2, 0], kDLFloat, 32, None, "ValueError"),
    ([2, 2], kDLFloat, 32, kDLCPU, "BufferError"),
    ([2, 2], kDLFloat, 32, 99, "BufferError"),
])
def test_allocator_reports_errors_through_set_error(device, shape, code, bits, device_type, kind):
    own_kind, ordinal = own_device_tuple(da.from_numpy(np.zeros(1, np.uint8), device=device))
    result = t.exchange_allocate(api(), shape, code, bits, own_kind if device_type is None else device_type, ordinal)
    assert isinstance(result, tuple) and result[0] == kind and result[1]


# ------------------------------------------------------------------ consumer ----

def test_round_trip_ours_to_ours_is_zero_copy(device):
    host = reference((5, 6), np.float32)
    for arr in (da.from_numpy(host, device=device), da.from_numpy(host, device=device)[1:4, 2:5]):
        back = da.from_dlpack(arr)
        assert isinstance(back, da.GpuMatND)
        np.testing.assert_array_equal(back.to_numpy(), arr.to_numpy())
        back.upload(np.zeros(back.shape, np.float32))
        np.testing.assert_array_equal(arr.to_numpy(), np.zeros(arr.shape, np.float32))  # same memory


def test_consumer_uses_the_table_and_releases_the_tensor_once(device):
    arr = da.from_numpy(reference((3, 4), np.float32), device=device)
    Fake = fake_producer_type(t.fake_exchange_api(), with_dlpack=True)
    producer = Fake(arr)
    imported = [da.from_dlpack(producer)]
    calls = t.fake_exchange_calls()
    assert calls["from_py_object"] == 1 and producer.dlpack_calls == 0
    assert calls["current_work_stream"] == 1 and calls["stream_device"] == own_device_tuple(arr)
    np.testing.assert_array_equal(imported[0].to_numpy(), arr.to_numpy())
    assert_released_once_when_dropped(imported)
    # The per-type cache: a second import asks the same table again, nothing else.
    da.from_dlpack(producer)
    assert t.fake_exchange_calls()["from_py_object"] == 2 and producer.dlpack_calls == 0


def test_consumer_copy_rules(device):
    arr = da.from_numpy(reference((3, 4), np.float32), device=device)
    Fake = fake_producer_type(t.fake_exchange_api())
    copied = da.from_dlpack(Fake(arr), copy=True)
    copied.upload(np.zeros((3, 4), np.float32))
    np.testing.assert_array_equal(arr.to_numpy(), reference((3, 4), np.float32))
    gc.collect()
    assert t.deleter_calls() == 1  # the copy does not keep the producer's tensor


def test_a_table_installed_later_is_seen(device):
    arr = da.from_numpy(np.ones(4, np.float32), device=device)
    Fake = fake_producer_type(t.fake_exchange_api(major=2), with_dlpack=True)
    producer = Fake(arr)
    da.from_dlpack(producer)  # only major 2 offered: __dlpack__ is used
    assert producer.dlpack_calls == 1 and t.fake_exchange_calls()["from_py_object"] == 0
    Fake.__dlpack_c_exchange_api__ = t.fake_exchange_api()
    da.from_dlpack(producer)
    assert producer.dlpack_calls == 1 and t.fake_exchange_calls()["from_py_object"] == 1


def test_newer_major_table_with_a_version_1_link_is_used(device):
    arr = da.from_numpy(np.ones(4, np.float32), device=device)
    Fake = fake_producer_type(t.fake_exchange_api(major=2, minor=0, prev_version=[1, 3]))
    np.testing.assert_array_equal(da.from_dlpack(Fake(arr)).to_numpy(), np.ones(4, np.float32))
    assert t.fake_exchange_calls()["from_py_object"] == 1


def test_newer_major_table_without_dlpack_is_refused(device):
    Fake = fake_producer_type(t.fake_exchange_api(major=2))
    with pytest.raises(TypeError, match="__dlpack__"):
        da.from_dlpack(Fake(da.from_numpy(np.ones(4, np.float32), device=device)))


@pytest.mark.parametrize("capsule_args, message", [
    (dict(name="something_else"), 'named "something_else"'),
    (dict(minor=2), "has version 1.2; .*1.3"),
    (dict(major=0, minor=9), "has version 0.9"),
    (dict(major=2, prev_version=[1, 1]), "has version 1.1"),
    (dict(null_from_py_object=True), "NULL managed_tensor_from_py_object_no_sync"),
    (dict(null_current_work_stream=True), "NULL current_work_stream"),
])
def test_malformed_tables_are_clear_errors(device, capsule_args, message):
    Fake = fake_producer_type(t.fake_exchange_api(**capsule_args), with_dlpack=True)
    producer = Fake(da.from_numpy(np.ones(4, np.float32), device=device))
    with pytest.raises(BufferError, match=message):
        da.from_dlpack(producer)
    assert t.fake_exchange_calls()["from_py_object"] == 0 and producer.dlpack_calls == 0


def test_attribute_that_is_not_a_capsule_is_a_clear_error(device):
    Fake = fake_producer_type(12345)
    with pytest.raises(BufferError, match="is a int, not a PyCapsule"):
        da.from_dlpack(Fake(da.from_numpy(np.ones(4, np.float32), device=device)))


@pytest.mark.parametrize("mode, error, message, deleted", [
    ("error", ValueError, "from_py_object failed", 0),
    ("silent_error", BufferError, "without setting a Python error", 0),
    ("no_tensor", BufferError, "returned no tensor", 0),
    ("error_with_tensor", ValueError, "returned a tensor and an error", 1),
])
def test_failing_producer_is_a_clear_error_and_leaks_nothing(device, mode, error, message, deleted):
    Fake = fake_producer_type(t.fake_exchange_api())
    t.set_fake_exchange(from_py_object=mode)
    with pytest.raises(error, match=message):
        da.from_dlpack(Fake(da.from_numpy(np.ones(4, np.float32), device=device)))
    gc.collect()
    assert t.deleter_calls() == deleted


@pytest.mark.parametrize("mode", ["error", "silent_error"])
def test_failing_stream_query(device, mode):
    arr = da.from_numpy(np.ones(4, np.float32), device=device)
    Fake = fake_producer_type(t.fake_exchange_api())
    t.set_fake_exchange(current_work_stream=mode)
    if device.backend() == da.ComputeBackend.opencl:
        # No OpenCL work stream: the producer hands out finished data, as with
        # __dlpack__(stream=None).
        np.testing.assert_array_equal(da.from_dlpack(Fake(arr)).to_numpy(), np.ones(4, np.float32))
    else:
        with pytest.raises((RuntimeError, BufferError)):
            da.from_dlpack(Fake(arr))
    gc.collect()
    assert t.deleter_calls() == 1


def test_import_onto_another_device_is_refused_and_releases_the_tensor(device):
    arr = da.from_numpy(np.ones(4, np.float32), device=device)
    Fake = fake_producer_type(t.fake_exchange_api())
    other = [d for d in da.ComputeDevice.all() if d != device]
    if other:
        with pytest.raises((BufferError, ValueError)):
            da.from_dlpack(Fake(arr), device=other[0])
        gc.collect()
        assert t.deleter_calls() == 1


# ------------------------------------------------------------------ streams ----

def test_import_after_work_on_a_user_stream_sees_the_finished_data(device):
    # Large enough that the copy is still running when the import returns.
    n = 1 << 22
    src = da.from_numpy(np.full(n, 3.0, np.float32), device=device)
    own = da.Stream(device)
    for _ in range(3):
        dst = src.clone(own)  # enqueued on a user stream, no host sync
        back = da.from_dlpack(dst)  # through the exchange API
        assert float(back.to_numpy().sum()) == pytest.approx(3.0 * n)


@pytest.mark.skipif(not cuda_devices(), reason="no CUDA device visible to devicearray")
def test_cuda_export_is_ready_on_the_reported_stream():
    device = cuda_devices()[0]
    n = 1 << 22
    src = da.from_numpy(np.full(n, 2.0, np.float32), device=device)
    dst = src.clone(da.Stream(device))  # pending on a user stream
    cap = t.exchange_from_py_object(api(), dst)
    assert t.exchange_current_work_stream(api(), kDLCUDA, device.ordinal()) == device.native_stream_handle()
    # The library's own stream was made to wait for the copy: work there sees it.
    np.testing.assert_array_equal(da.from_dlpack(cap).to_numpy(), np.full(n, 2.0, np.float32))


def _torch():
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means "not usable here"
        pytest.skip(f"torch is not importable: {e}")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    if not hasattr(torch.Tensor, "__dlpack_c_exchange_api__"):
        pytest.skip("this torch has no DLPack C exchange API")
    return torch


@pytest.mark.skipif(not cuda_devices(), reason="no CUDA device visible to devicearray")
def test_torch_tensor_through_the_exchange_api_is_zero_copy_and_ordered():
    torch = _torch()
    device = cuda_devices()[0]
    n = 1 << 24
    for _ in range(5):
        side = torch.cuda.Stream(device=device.ordinal())
        with torch.cuda.stream(side):
            tensor = torch.full((n,), 3.0, dtype=torch.float32, device=f"cuda:{device.ordinal()}")
            arr = da.from_dlpack(tensor)  # the library orders its work after `side`
        assert arr.get_device_ptr() == tensor.data_ptr()
        assert float(arr.to_numpy().sum()) == pytest.approx(3.0 * n)
        side.synchronize()


@pytest.mark.skipif(not cuda_devices(), reason="no CUDA device visible to devicearray")
def test_torch_round_trips_through_both_tables_without_leaks():
    torch = _torch()
    device = cuda_devices()[0]
    tensor = torch.arange(12, dtype=torch.float32, device=f"cuda:{device.ordinal()}").reshape(3, 4)
    for _ in range(200):
        arr = da.from_dlpack(tensor)
        back = torch.from_dlpack(arr)
        assert back.data_ptr() == tensor.data_ptr()
    del arr, back
    gc.collect()
    torch.cuda.synchronize()
