"""Fork safety: a process forked (multiprocessing's "fork" start method) after
devicearray initialised a device backend gets a clear RuntimeError telling it to use
the "spawn" start method, instead of hanging in the driver; "spawn" works, and the
parent keeps working. Each case is a user's program run in a fresh interpreter, so
neither a hang nor what the test process has loaded (other frameworks' threads)
decides the outcome."""

import subprocess
import sys
import textwrap

import pytest

from conftest import DEVICE_COUNT

PROGRAM = textwrap.dedent('''
    import multiprocessing
    import sys

    import numpy as np
    import devicearray as da


    def use_library(results):
        try:
            device = da.ComputeDevice.default_device()
            arr = da.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3), format=da.Format.PointXYZ,
                                device=device)
            results.put(("ok", str(arr.shape)))
        except RuntimeError as e:
            results.put(("RuntimeError", str(e)))
        except BaseException as e:  # anything else is reported as a failure
            results.put((type(e).__name__, str(e)))


    if __name__ == "__main__":
        da.ComputeDevice.default_device()  # the parent initialises a backend first
        ctx = multiprocessing.get_context(sys.argv[1])
        results = ctx.Queue()
        child = ctx.Process(target=use_library, args=(results,))
        child.start()
        kind, message = results.get(timeout=100)
        child.join(100)
        print(kind)
        print(message)
        arr = da.from_numpy(np.ones((2, 3), dtype=np.float32), format=da.Format.PointXYZ)
        assert (arr.to_numpy() == 1).all(), "the parent no longer works after the child"
''')

needs_device = pytest.mark.skipif(DEVICE_COUNT == 0, reason="no device visible to devicearray")


def run_program(tmp_path, method):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    result = subprocess.run([sys.executable, str(script), method], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, f"rc {result.returncode}\n{result.stdout}\n{result.stderr}"
    kind, message = result.stdout.splitlines()[:2]
    return kind, message


@needs_device
def test_fork_after_initialisation_raises_a_clear_error_in_the_child(tmp_path):
    kind, message = run_program(tmp_path, "fork")
    assert kind == "RuntimeError", (kind, message)
    assert "forked" in message, message
    assert "'spawn'" in message, message
    assert "ComputeDevice::default_device" in message or "ComputeDevice::defaultDevice" in message, message


@needs_device
def test_spawn_start_method_works(tmp_path):
    kind, message = run_program(tmp_path, "spawn")
    assert (kind, message) == ("ok", "(4, 3)")
