"""Fork safety: a process forked (multiprocessing's "fork" start method) after
devicearray initialised a device backend gets a clear RuntimeError telling it to use
the "spawn" start method, instead of hanging in the driver; "spawn" works."""

import multiprocessing
import queue

import numpy as np
import pytest

import devicearray as da

TIMEOUT_S = 120  # a child that takes longer is taken to hang


def _use_library(results):
    """Runs in the child: a device call, reporting what happened."""
    try:
        device = da.ComputeDevice.default_device()
        arr = da.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3), format=da.Format.PointXYZ, device=device)
        results.put(("ok", str(arr.shape)))
    except RuntimeError as e:
        results.put(("RuntimeError", str(e)))
    except BaseException as e:  # anything else is a failure the parent reports
        results.put((type(e).__name__, str(e)))


def _run_in(method):
    ctx = multiprocessing.get_context(method)
    results = ctx.Queue()
    child = ctx.Process(target=_use_library, args=(results,))
    child.start()
    try:
        return results.get(timeout=TIMEOUT_S)
    except queue.Empty:
        pytest.fail(f"the '{method}' child gave no answer within {TIMEOUT_S} s (it hung)")
    finally:
        child.join(timeout=TIMEOUT_S)
        if child.is_alive():
            child.kill()
            child.join()


def _devices():
    try:
        return da.ComputeDevice.all()
    except RuntimeError:
        return []


needs_device = pytest.mark.skipif(not _devices(), reason="no device visible to devicearray")


@needs_device
def test_fork_after_initialisation_raises_a_clear_error_in_the_child():
    da.ComputeDevice.default_device()  # the parent has initialised a backend
    kind, message = _run_in("fork")
    assert kind == "RuntimeError", (kind, message)
    assert "forked" in message, message
    assert "'spawn'" in message, message
    assert "ComputeDevice::default_device" in message or "ComputeDevice::defaultDevice" in message, message


@needs_device
def test_parent_still_works_after_forking_a_child():
    _run_in("fork")
    arr = da.from_numpy(np.ones((2, 3), dtype=np.float32), format=da.Format.PointXYZ)
    assert np.array_equal(arr.to_numpy(), np.ones((2, 3), dtype=np.float32))


@needs_device
def test_spawn_start_method_works():
    kind, message = _run_in("spawn")
    assert kind == "ok", (kind, message)
