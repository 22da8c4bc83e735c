"""Runs the Python examples of docs/gpu-access-tutorial.md (examples/python/*.py)
where they can run: each needs a CUDA device and its framework (PyTorch, CuPy), and
is skipped otherwise. Each example checks its own results and exits non-zero on a
mismatch."""

import importlib.util
import os
import pathlib
import subprocess
import sys

import pytest

import devicearray as da
from conftest import cuda_devices

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"
NEEDS = {"point_cloud_to_torch.py": "torch", "color_image_to_cupy.py": "cupy", "frame_loop_to_torch.py": "torch"}


def test_every_python_example_is_listed_here():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(NEEDS)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_example_runs_and_checks_its_results(name):
    if not cuda_devices():
        pytest.skip("no CUDA device visible to devicearray")
    if importlib.util.find_spec(NEEDS[name]) is None:
        pytest.skip(f"{NEEDS[name]} is not installed")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    result = subprocess.run([sys.executable, str(EXAMPLES / name)], env=env, capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "skipped" not in result.stdout, result.stdout
    assert "ok" in result.stdout
