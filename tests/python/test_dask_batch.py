"""devicearray.dask.process_frames and `devicearray batch` on a LocalCluster of 2 worker
processes over 20 small frames: outputs byte for byte those of `devicearray process`,
resume after an interrupted run, a worker killed mid-batch, a corrupt frame, inputs as
files, globs and manifests, and the message without Dask."""

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("dask", reason="the batch tests need Dask: pip install dask distributed (the [dask] extra)")
distributed = pytest.importorskip("distributed",
                                  reason="the batch tests need Dask: pip install dask distributed (the [dask] extra)")

import devicearray as da  # noqa: E402
from devicearray import dask as batch  # noqa: E402

from test_frame_pipeline import RIGID, command_path, write_scene  # noqa: E402

FRAMES = 20
STAGES = ["--downsample", "2x2", "--normals", "--transform", RIGID]


def batch_env():
    """The environment of a child that runs the batch module: the package this suite imports."""
    env = dict(os.environ)
    package_root = str(pathlib.Path(da.__file__).resolve().parents[1])
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.fixture(scope="module")
def frames(tmp_path_factory):
    """20 small organized frames: `devicearray synth` scenes where the command is built,
    numpy-written ones otherwise."""
    directory = tmp_path_factory.mktemp("frames")
    cli = command_path()
    paths = []
    for i in range(FRAMES):
        path = directory / f"frame_{i:03d}.ply"
        if cli is not None:
            subprocess.run([str(cli), "synth", "-o", str(path), "-H", "24", "-W", "32", "--seed", str(i + 1)],
                           check=True, capture_output=True, timeout=120)
        else:
            write_scene(path, height=24, width=32, seed=i + 1)
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def reference(frames, tmp_path_factory):
    """What `devicearray process` writes for each frame (process_ply_file, the same code,
    where the command is not built)."""
    directory = tmp_path_factory.mktemp("reference")
    cli = command_path()
    out = {}
    for path in frames:
        target = directory / pathlib.Path(path).name
        if cli is not None:
            subprocess.run([str(cli), "process", path, *STAGES, "-o", str(target)], check=True, capture_output=True,
                           timeout=120)
        else:
            da.process_ply_file(path, target, da.PipelineStages.parse(STAGES))
        out[pathlib.Path(path).name] = target.read_bytes()
    return out


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            c.wait_for_workers(2)
            yield c


def assert_outputs(directory, reference, names=None):
    names = sorted(reference) if names is None else names
    for name in names:
        assert (pathlib.Path(directory) / name).read_bytes() == reference[name], name
    visible = sorted(p.name for p in pathlib.Path(directory).iterdir() if not p.name.startswith("."))
    assert visible == sorted(names)


def journal_outputs(directory):
    lines = (pathlib.Path(directory) / batch.JOURNAL_NAME).read_text().splitlines()
    import json
    return [json.loads(line)["output"] for line in lines]


def test_outputs_are_the_bytes_of_process(frames, reference, client, tmp_path):
    summary = batch.process_frames(frames, tmp_path, da.PipelineStages.parse(STAGES), client)
    assert summary.ok and summary.processed == FRAMES and summary.skipped == 0 and summary.frames == FRAMES
    assert summary.workers == 2
    assert_outputs(tmp_path, reference)
    assert sorted(journal_outputs(tmp_path)) == sorted(reference)
    assert len({r.worker for r in summary.results}) == 2, "both workers ran frames"
    text = str(summary)
    assert "frames: 20 (20 processed, 0 already done, 0 failed) on 2 workers" in text
    assert "frames/s" in text and "downsample 2x2" in text and "write PLY" in text
    # Stages given as the command's options run the same.
    again = batch.process_frames(frames[:2], tmp_path / "options", STAGES, client)
    assert again.ok
    assert_outputs(tmp_path / "options", reference, [pathlib.Path(p).name for p in frames[:2]])


def test_rerun_resumes_after_an_interrupted_run(frames, reference, client, tmp_path):
    done = []

    def interrupt_after_five(result):
        done.append(result)
        if len(done) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        batch.process_frames(frames, tmp_path, STAGES, client, on_frame=interrupt_after_five)
    recorded = journal_outputs(tmp_path)
    assert len(recorded) == 5
    # A frame of the interrupted run that a worker had already started still finishes
    # (it is not journaled); wait for it so that it cannot rewrite an output later.
    deadline = time.monotonic() + 60
    while any(client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.1)

    summary = batch.process_frames(frames, tmp_path, STAGES, client)
    assert summary.ok and summary.skipped == 5 and summary.processed == FRAMES - 5
    assert_outputs(tmp_path, reference)
    assert sorted(journal_outputs(tmp_path)) == sorted(reference)

    # Everything done: nothing runs. A replaced output and a new pipeline run again.
    assert batch.process_frames(frames, tmp_path, STAGES, client).skipped == FRAMES
    replaced = tmp_path / pathlib.Path(frames[3]).name
    replaced.write_bytes(b"not the output")
    summary = batch.process_frames(frames, tmp_path, STAGES, client)
    assert summary.processed == 1 and summary.skipped == FRAMES - 1
    assert_outputs(tmp_path, reference)
    assert batch.process_frames(frames, tmp_path, STAGES + ["--unorganize"], client).processed == FRAMES
    assert batch.process_frames(frames, tmp_path, STAGES, client, resume=False).processed == FRAMES
    assert_outputs(tmp_path, reference)


def test_a_worker_killed_mid_batch_loses_no_frame(frames, reference, client, tmp_path):
    pids = sorted(client.run(os.getpid).values())
    killed = []

    def kill_a_worker(result):
        if not killed:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])

    summary = batch.process_frames(frames, tmp_path, STAGES, client, on_frame=kill_a_worker)
    assert killed
    assert summary.ok, str(summary)
    assert summary.processed == FRAMES
    assert_outputs(tmp_path, reference)
    recorded = journal_outputs(tmp_path)
    assert sorted(recorded) == sorted(reference), "each frame recorded exactly once"
    client.wait_for_workers(2, timeout=60)  # the nanny restarted the killed worker
    assert pids[0] not in client.run(os.getpid).values()


def test_a_corrupt_frame_is_reported_and_the_others_are_done(frames, reference, client, tmp_path):
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    for path in frames[:6]:
        (inputs / pathlib.Path(path).name).write_bytes(pathlib.Path(path).read_bytes())
    corrupt = inputs / "frame_corrupt.ply"
    corrupt.write_bytes(b"ply\nformat binary_little_endian 1.0\nelement vertex 100\nproperty float x\nend_header\n1")
    out = tmp_path / "out"

    summary = batch.process_frames(sorted(str(p) for p in inputs.iterdir()), out, STAGES, client)
    assert not summary.ok and summary.processed == 6
    assert [f.input for f in summary.failures] == [str(corrupt)]
    assert summary.failures[0].error
    assert f"failed: {corrupt}" in str(summary)

    # The command: the failure on stderr with its path, the others written, exit status 1.
    run = subprocess.run([sys.executable, "-m", "devicearray.batch", str(inputs / "*.ply"), "-o", str(out / "cli"),
                          *STAGES, "--scheduler", client.scheduler.address], capture_output=True, text=True,
                         env=batch_env(), timeout=300)
    assert run.returncode == 1, run.stderr
    assert f"error: {corrupt}:" in run.stderr
    assert "frames: 7 (6 processed, 0 already done, 1 failed)" in run.stdout
    assert_outputs(out / "cli", reference, [pathlib.Path(p).name for p in frames[:6]])


def test_the_devicearray_command_runs_the_batch(frames, reference, client, tmp_path):
    cli = command_path()
    if cli is None:
        pytest.skip("the devicearray command is not built next to this package (set DEVICEARRAY_CLI)")
    env = batch_env()
    env["DEVICEARRAY_PYTHON"] = sys.executable
    manifest = tmp_path / "frames.txt"
    manifest.write_text("# two frames\n" + "\n".join(frames[:2]) + "\n\n")
    run = subprocess.run([str(cli), "batch", str(manifest), "-o", str(tmp_path / "out"), *STAGES, "--scheduler",
                          client.scheduler.address], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "frames: 2 (2 processed" in run.stdout
    assert_outputs(tmp_path / "out", reference, [pathlib.Path(p).name for p in frames[:2]])
    helped = subprocess.run([str(cli), "batch", "--help"], capture_output=True, text=True, env=env, timeout=120)
    assert helped.returncode == 0 and "--scheduler" in helped.stdout and "--downsample" in helped.stdout
    env["DEVICEARRAY_PYTHON"] = str(tmp_path / "no-such-python")
    missing = subprocess.run([str(cli), "batch", str(manifest), "-o", str(tmp_path)], capture_output=True, text=True,
                             env=env, timeout=60)
    assert missing.returncode != 0 and "DEVICEARRAY_PYTHON" in missing.stderr


def test_without_dask_the_command_says_what_to_install(frames, tmp_path):
    code = ("import sys; sys.modules['distributed'] = None\n"
            "from devicearray.batch import main\n"
            f"sys.exit(main([{frames[0]!r}, '-o', {str(tmp_path)!r}]))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=batch_env(), timeout=120)
    assert run.returncode == 1
    assert "pip install 'devicearray[dask]'" in run.stderr
    assert not list(tmp_path.iterdir())


def test_usage_errors_exit_with_status_2(frames, tmp_path):
    for args in (["--downsample", "5x5"], ["--min-points", "2"], ["--workers", "0"]):
        run = subprocess.run([sys.executable, "-m", "devicearray.batch", frames[0], "-o", str(tmp_path), *args],
                             capture_output=True, text=True, env=batch_env(), timeout=120)
        assert run.returncode == 2, (args, run.stderr)
    run = subprocess.run([sys.executable, "-m", "devicearray.batch", str(tmp_path / "none-*.ply"), "-o", str(tmp_path)],
                         capture_output=True, text=True, env=batch_env(), timeout=120)
    assert run.returncode == 2 and "no file matches" in run.stderr


def test_inputs_are_files_globs_and_manifests(frames, tmp_path):
    directory = pathlib.Path(frames[0]).parent
    manifest = tmp_path / "list.txt"
    manifest.write_text(f"# frames\n{pathlib.Path(frames[1]).name}\n\n{directory / 'frame_01[0-2].ply'}\n")
    (tmp_path / pathlib.Path(frames[1]).name).write_bytes(b"")  # relative lines are relative to the manifest
    got = batch.expand_inputs([frames[0], str(directory / "frame_00[2-3].ply"), manifest])
    assert got == [frames[0], frames[2], frames[3], str(tmp_path / pathlib.Path(frames[1]).name), frames[10],
                   frames[11], frames[12]]
    with pytest.raises(ValueError, match="no such file"):
        batch.expand_inputs([str(tmp_path / "missing.ply")])
    with pytest.raises(ValueError, match="no file matches"):
        batch.expand_inputs([str(tmp_path / "*.pcd")])
    with pytest.raises(ValueError, match="both be written"):
        batch.process_frames([frames[0], str(tmp_path / pathlib.Path(frames[0]).name)], tmp_path / "o", STAGES)
    with pytest.raises(ValueError, match="not a frame"):
        batch.process_frames([str(manifest)], tmp_path / "o", STAGES)
    with pytest.raises(ValueError):
        batch.process_frames(frames, tmp_path / "o", ["--voxel", "-1"])


# Every stage of process, the camera filters included, with values that change the frames.
FILTER_STAGES = ["--snr-threshold", "0.5", "--remove-outliers", "200", "--smooth", "1", "--smooth-radius", "2",
                 "--fill-holes", "2", "--max-depth-step", "15", "--downsample", "2x2", "--normals",
                 "--normal-window", "5", "--voxel", "60", "--min-points", "1"]


def test_the_batch_takes_every_stage_option_of_process(frames, client, tmp_path):
    cli = command_path()
    if cli is None:
        pytest.skip("the devicearray command is not built next to this package (set DEVICEARRAY_CLI)")
    # The options of process that are not stages: its input and output, the frame loop, the device.
    not_stages = {"--help", "--output", "--frames", "--in-flight", "--pinned-frames", "--device", "--format"}
    helped = subprocess.run([str(cli), "process", "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0, helped.stderr
    import re
    options = set(re.findall(r"^\s+(?:-\w,)?(--[a-z-]+)", helped.stdout, re.MULTILINE)) - not_stages
    assert {"--snr-threshold", "--smooth", "--normal-window", "--voxel"} <= options, options
    from devicearray import batch as batch_command
    taken = set(batch_command._parser("devicearray batch")._option_string_actions)
    assert options <= taken, sorted(options - taken)

    # Their outputs are process's, byte for byte.
    out = tmp_path / "out"
    for path in frames[:2]:
        target = tmp_path / pathlib.Path(path).name
        run = subprocess.run([str(cli), "process", path, *FILTER_STAGES, "-o", str(target)], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr
    run = subprocess.run([sys.executable, "-m", "devicearray.batch", *frames[:2], "-o", str(out), *FILTER_STAGES,
                          "--scheduler", client.scheduler.address], capture_output=True, text=True, env=batch_env(),
                         timeout=300)
    assert run.returncode == 0, run.stderr
    for path in frames[:2]:
        name = pathlib.Path(path).name
        assert (out / name).read_bytes() == (tmp_path / name).read_bytes(), name
