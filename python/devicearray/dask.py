"""Recorded frames processed on Dask: one task per frame, on many GPUs and machines.

``process_frames(paths, output_dir, stages)`` runs the stages of ``devicearray process``
on every frame, each frame one Dask task that calls the same library function as the
command (``process_ply_file``), so each output is byte for byte what ``devicearray
process`` writes for that input. Outputs go to ``output_dir`` under their input's file
name.

What a batch guarantees:

* Each worker process opens its device once (the default device: on a
  ``LocalCUDACluster`` the GPU the worker is pinned to) and keeps it, with its memory
  pool, for every frame it runs.
* Outputs are written to a temporary name and renamed when complete, so an output file
  is never half written; a worker killed mid-frame loses nothing: Dask runs its frames
  again elsewhere, and running a frame twice writes the same bytes.
* The batch journal (``.devicearray-batch.jsonl`` in ``output_dir``) records each output
  once it is written: the input (path, size, modification time), the stage options and
  the PLY format, and the output's size and modification time. A rerun skips a frame
  whose record matches and whose output is still the file recorded (resume); anything
  else (a new pipeline, a changed input, a missing or replaced output) runs again.
* A frame that fails (unreadable or corrupt input, a stage that refuses it) is
  reported with its path and error and does not stop the others.

Without a ``client`` a local cluster is started for the call: a ``LocalCUDACluster``
(one worker per GPU) when dask-cuda is installed and sees a GPU, else a
``LocalCluster`` of worker processes. Needs ``pip install 'devicearray[dask]'``.
"""

from __future__ import annotations

import atexit
import dataclasses
import glob
import json
import os
import pathlib
import threading
import time
from typing import Callable, Iterable, Sequence

try:
    import distributed
except ImportError as error:  # the optional dependency: say what to install
    raise ImportError(
        "devicearray.dask needs Dask: pip install 'devicearray[dask]' (dask and distributed; on CUDA machines "
        "also dask-cuda: pip install 'devicearray[dask-cuda]')",
        name=error.name,
    ) from error

import devicearray as _da

__all__ = [
    "BatchSummary",
    "FrameResult",
    "JOURNAL_NAME",
    "expand_inputs",
    "local_cluster",
    "output_path_for",
    "process_frames",
]

#: The batch journal in the output directory (one JSON object per line).
JOURNAL_NAME = ".devicearray-batch.jsonl"

PLY_FORMATS = ("binary", "ascii", "binary_big_endian")


# ------------------------------------------------------------ frame kinds --

def _process_ply(input_path: str, output_path: str, stages, device, ply_format: str):
    return _da.process_ply_file(input_path, output_path, stages, device, ply_format)


@dataclasses.dataclass(frozen=True)
class _FrameKind:
    """How a frame of one file kind is processed, and the suffix of its output."""
    process: Callable  # (input_path, output_path, stages, device, ply_format) -> PipelineResult
    output_suffix: str | None  # None: the output keeps the input's file name


# Frame readers by input suffix (lower case). A reader the library gains (another
# point-cloud or depth-image format) is one more entry here.
_FRAME_KINDS = {
    ".ply": _FrameKind(_process_ply, None),
    # process reads every point-cloud file the library reads; its output is PLY.
    ".pcd": _FrameKind(_process_ply, ".ply"),
    ".xyz": _FrameKind(_process_ply, ".ply"),
}


def _kind_of(path: str) -> _FrameKind:
    kind = _FRAME_KINDS.get(pathlib.Path(path).suffix.lower())
    if kind is None:
        raise ValueError(f"{path}: not a frame this batch can read (supported: {', '.join(sorted(_FRAME_KINDS))})")
    return kind


def output_path_for(input_path: str | os.PathLike, output_dir: str | os.PathLike) -> pathlib.Path:
    """Where the output of `input_path` goes: in `output_dir`, under the input's file name."""
    path = pathlib.Path(input_path)
    kind = _kind_of(str(path))
    name = path.name if kind.output_suffix is None else path.with_suffix(kind.output_suffix).name
    return pathlib.Path(output_dir) / name


def expand_inputs(inputs: Iterable[str | os.PathLike]) -> list[str]:
    """The frames named by `inputs`, in order: a file of a supported kind is itself; a
    pattern with ``*``, ``?`` or ``[`` is its matches, sorted (``**`` recurses); any
    other existing file is a manifest listing one path or pattern per line (blank lines
    and lines starting with ``#`` are skipped; relative paths are relative to the
    manifest). Raises ValueError for a pattern without matches or a path that does not
    exist."""
    frames: list[str] = []

    def add(item: str, base: pathlib.Path | None, depth: int) -> None:
        text = item if base is None or os.path.isabs(item) else str(base / item)
        if glob.has_magic(text):
            matches = sorted(glob.glob(text, recursive=True))
            if not matches:
                raise ValueError(f"{item}: no file matches this pattern")
            frames.extend(m for m in matches if os.path.isfile(m))
        elif pathlib.Path(text).suffix.lower() in _FRAME_KINDS:
            if not os.path.isfile(text):
                raise ValueError(f"{text}: no such file")
            frames.append(text)
        elif os.path.isfile(text):
            if depth > 0:
                raise ValueError(f"{text}: a manifest may list frames and patterns, not other manifests")
            manifest = pathlib.Path(text)
            for line in manifest.read_text(encoding="utf-8").splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    add(line, manifest.parent, depth + 1)
        else:
            raise ValueError(f"{text}: no such file")

    for item in inputs:
        add(os.fspath(item), None, 0)
    return frames


# ----------------------------------------------------- what a worker runs --

_worker_state = threading.local()
_worker_lock = threading.Lock()
_worker_device = None  # (pid, ComputeDevice): a forked child opens its own


def worker_device():
    """The device of this worker process: the default device, opened once and kept (with
    its memory pool) for every frame the process runs."""
    global _worker_device
    with _worker_lock:
        if _worker_device is None or _worker_device[0] != os.getpid():
            _worker_device = (os.getpid(), _da.ComputeDevice.default_device())
        return _worker_device[1]


def _forget_worker_device() -> None:
    # Before the interpreter tears the extension down, so the device is released as
    # any object of the library is, not reported as alive at exit.
    global _worker_device
    with _worker_lock:
        _worker_device = None


atexit.register(_forget_worker_device)


class DevicePlugin(distributed.WorkerPlugin):
    """Opens the worker's device when the worker starts, so the first frame does not
    pay for it, and lets it go when the worker closes."""

    name = "devicearray-device"

    def setup(self, worker):
        worker_device()

    def teardown(self, worker):
        _forget_worker_device()


def _stages_from(stage_args: tuple) -> object:
    """PipelineStages parsed once per thread for the arguments of a batch."""
    cache = getattr(_worker_state, "stages", None)
    if cache is None or cache[0] != stage_args:
        cache = (stage_args, _da.PipelineStages.parse(list(stage_args)))
        _worker_state.stages = cache
    return cache[1]


@dataclasses.dataclass
class FrameResult:
    """What became of one frame."""
    input: str
    output: str
    ok: bool
    skipped: bool = False  # resumed: the journal already holds this output
    error: str = ""  # the failure, when not ok
    seconds: float = 0.0  # wall time of the frame on its worker
    stages: list = dataclasses.field(default_factory=list)  # (stage, wall_ms, device_ms) per row
    worker: str = ""


def _run_frame(input_path: str, output_path: str, stage_args: tuple, ply_format: str) -> FrameResult:
    """One frame, on a worker: the shared pipeline on the worker's device. Errors of the
    frame itself are returned, not raised: a failed frame is a result, not a reason for
    Dask to run it again."""
    start = time.perf_counter()
    worker = f"{os.uname().nodename}:{os.getpid()}"
    try:
        stages = _stages_from(stage_args)
        result = _kind_of(input_path).process(input_path, output_path, stages, worker_device(), ply_format)
    except Exception as error:  # noqa: BLE001 - every failure of a frame is reported with its path
        return FrameResult(input_path, output_path, False, error=f"{type(error).__name__}: {error}",
                           seconds=time.perf_counter() - start, worker=worker)
    rows = [(r.stage, r.wall_ms, r.device_ms) for r in result.stages]
    return FrameResult(input_path, output_path, True, seconds=time.perf_counter() - start, stages=rows,
                       worker=worker)


# --------------------------------------------------------------- journal --

def _file_stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class _Journal:
    """The record of outputs written (see the module's docstring). Only the process that
    runs the batch writes it, one line per output, flushed as each frame completes; a
    line cut short by a crash is ignored."""

    def __init__(self, output_dir: pathlib.Path):
        self.path = output_dir / JOURNAL_NAME
        self.entries: dict[str, dict] = {}
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            text = ""
        for line in text.splitlines():
            try:
                entry = json.loads(line)
                self.entries[entry["output"]] = entry
            except (ValueError, KeyError, TypeError):
                continue
        self._file = None

    @staticmethod
    def _record(input_path: str, output_path: str, stage_args: list, ply_format: str) -> dict | None:
        stamp_in = _file_stamp(input_path)
        stamp_out = _file_stamp(output_path)
        if stamp_in is None or stamp_out is None:
            return None
        return {"output": os.path.basename(output_path), "input": os.path.abspath(input_path),
                "input_size": stamp_in[0], "input_mtime_ns": stamp_in[1], "stages": list(stage_args),
                "format": ply_format, "output_size": stamp_out[0], "output_mtime_ns": stamp_out[1]}

    def is_complete(self, input_path: str, output_path: str, stage_args: list, ply_format: str) -> bool:
        entry = self.entries.get(os.path.basename(output_path))
        return entry is not None and entry == self._record(input_path, output_path, stage_args, ply_format)

    def add(self, input_path: str, output_path: str, stage_args: list, ply_format: str) -> None:
        record = self._record(input_path, output_path, stage_args, ply_format)
        if record is None:
            return
        if self._file is None:
            self._file = open(self.path, "a", encoding="utf-8")
        self._file.write(json.dumps(record) + "\n")
        self._file.flush()
        self.entries[record["output"]] = record

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


# --------------------------------------------------------------- summary --

@dataclasses.dataclass
class BatchSummary:
    """What a batch did."""
    frames: int  # frames in the batch
    processed: int  # frames run and written now
    skipped: int  # frames whose output the journal already held
    failures: list  # FrameResult of each failed frame
    seconds: float  # wall time from the first task submitted to the last result
    workers: int  # workers of the cluster when the batch started
    stage_ms: dict  # stage -> (frames, total wall ms, total device ms)
    results: list  # FrameResult of every frame, in input order

    @property
    def frames_per_second(self) -> float:
        return self.processed / self.seconds if self.seconds > 0 else 0.0

    @property
    def ok(self) -> bool:
        return not self.failures

    def __str__(self) -> str:
        head = (f"frames: {self.frames} ({self.processed} processed, {self.skipped} already done, "
                f"{len(self.failures)} failed)")
        if self.skipped == self.frames:
            return head + ": nothing to do"
        lines = [f"{head} on {self.workers} worker{'s' if self.workers != 1 else ''}",
                 f"time: {self.seconds:.3f} s, {self.frames_per_second:.2f} frames/s"]
        if self.stage_ms:
            lines.append(f"{'stage':<28} {'frames':>7} {'wall ms/frame':>14} {'GPU ms/frame':>13}")
            for stage, (count, wall, device) in self.stage_ms.items():
                gpu = "-" if device != device else f"{device / count:.3f}"  # NaN: a host-only stage
                lines.append(f"{stage:<28} {count:>7} {wall / count:>14.3f} {gpu:>13}")
        for failure in self.failures:
            lines.append(f"failed: {failure.input}: {failure.error}")
        return "\n".join(lines)


# ----------------------------------------------------------------- cluster --

def local_cluster(workers: int | None = None):
    """A local cluster for a batch: a LocalCUDACluster (one worker per GPU, or the first
    `workers` GPUs) when dask-cuda is installed and sees a GPU, else a LocalCluster of
    `workers` single-threaded worker processes (default 1: an OpenCL CPU device already
    uses every core)."""
    try:
        import dask_cuda
        from dask_cuda.utils import get_n_gpus
        gpus = get_n_gpus()
    except Exception:  # noqa: BLE001 - no dask-cuda, no NVML, no GPU: a plain LocalCluster
        gpus = 0
    if gpus > 0:
        return dask_cuda.LocalCUDACluster(n_workers=min(workers or gpus, gpus), threads_per_worker=1,
                                          dashboard_address=None)
    return distributed.LocalCluster(n_workers=workers or 1, threads_per_worker=1, processes=True,
                                    dashboard_address=None)


def _register_device_plugin(client) -> None:
    plugin = DevicePlugin()
    if hasattr(client, "register_plugin"):
        client.register_plugin(plugin)
    else:  # distributed before 2023.9
        client.register_worker_plugin(plugin)


def _stage_arguments(stages) -> list[str]:
    if isinstance(stages, _da.PipelineStages):
        return stages.to_arguments()
    if isinstance(stages, (str, bytes)) or not isinstance(stages, Sequence):
        raise TypeError("stages must be a PipelineStages or the list of stage options of `devicearray process`")
    return _da.PipelineStages.parse([os.fspath(s) for s in stages]).to_arguments()


def _show_progress(futures) -> threading.Thread:
    thread = threading.Thread(target=distributed.progress, args=(futures,), kwargs={"notebook": False},
                              daemon=True, name="devicearray-batch-progress")
    thread.start()
    return thread


def _remove_stale_temporaries(outputs: list[str]) -> None:
    """Removes what a killed worker left of an unfinished write (the writers' temporary
    ".NAME.tmp-XXXXXX" next to NAME). Called once every frame of the batch is done."""
    for output in outputs:
        directory, name = os.path.split(output)
        for temporary in glob.glob(os.path.join(glob.escape(directory), "." + glob.escape(name) + ".tmp-??????")):
            try:
                os.unlink(temporary)
            except OSError:
                pass


def process_frames(paths: Iterable[str | os.PathLike], output_dir: str | os.PathLike, stages, client=None, *,
                   format: str = "binary", resume: bool = True, progress: bool = False,
                   workers: int | None = None,
                   on_frame: Callable[[FrameResult], None] | None = None) -> BatchSummary:
    """Runs the stages of ``devicearray process`` on every frame of `paths`, one Dask
    task per frame, writing each output to `output_dir` under its input's file name
    (byte for byte what ``devicearray process INPUT [stages] -o OUTPUT --format FORMAT``
    writes).

    stages: a PipelineStages or the stage options of ``devicearray process`` (e.g.
    ``["--downsample", "2x2", "--voxel", "5"]``). client: a ``distributed.Client``;
    None starts ``local_cluster(workers)`` for this call. format: the PLY encoding
    ('binary', 'ascii', 'binary_big_endian'). resume: skip frames the journal records as
    written by the same stages and format from the same input (False runs every frame).
    progress: show Dask's progress bar. on_frame: called in this process with each
    FrameResult as it arrives.

    Returns a BatchSummary; failed frames are in its ``failures`` (the call does not
    raise for them). Raises ValueError for stages ``devicearray process`` refuses, an
    input of an unsupported kind, or two inputs with the same file name."""
    if format not in PLY_FORMATS:
        raise ValueError(f"format must be one of {', '.join(PLY_FORMATS)}, not {format!r}")
    stage_args = _stage_arguments(stages)
    inputs = [os.fspath(p) for p in paths]
    out_dir = pathlib.Path(output_dir)
    outputs = [str(output_path_for(p, out_dir)) for p in inputs]
    seen: dict[str, str] = {}
    for source, target in zip(inputs, outputs):
        if target in seen:
            raise ValueError(f"{seen[target]} and {source} would both be written to {target}")
        seen[target] = source
    out_dir.mkdir(parents=True, exist_ok=True)

    journal = _Journal(out_dir)
    results: list[FrameResult | None] = [None] * len(inputs)
    todo = []
    for i, (source, target) in enumerate(zip(inputs, outputs)):
        if resume and journal.is_complete(source, target, stage_args, format):
            results[i] = FrameResult(source, target, True, skipped=True)
        else:
            todo.append(i)

    own_cluster = None
    if client is None and todo:
        own_cluster = local_cluster(workers)
        client = distributed.Client(own_cluster)
    start = time.perf_counter()
    try:
        worker_count = 0
        if todo:
            if own_cluster is not None:
                client.wait_for_workers(len(own_cluster.workers))
            worker_count = len(client.nthreads())
            _register_device_plugin(client)
            start = time.perf_counter()
            futures = client.map(_run_frame, [inputs[i] for i in todo], [outputs[i] for i in todo],
                                 stage_args=tuple(stage_args), ply_format=format, pure=False)
            index_of = {f.key: i for f, i in zip(futures, todo)}
            bar = _show_progress(futures) if progress else None
            try:
                for future in distributed.as_completed(futures):
                    i = index_of[future.key]
                    try:
                        result = future.result()
                    except Exception as error:  # noqa: BLE001 - e.g. KilledWorker: the frame kept killing workers
                        result = FrameResult(inputs[i], outputs[i], False, error=f"{type(error).__name__}: {error}")
                    if result.ok:
                        journal.add(inputs[i], outputs[i], stage_args, format)
                    results[i] = result
                    if on_frame is not None:
                        on_frame(result)
            except BaseException:
                # Interrupted (Ctrl-C, an exception of on_frame): frames not yet run are
                # dropped; what was written is in the journal, and a rerun resumes there.
                client.cancel(futures)
                raise
            if bar is not None:
                bar.join(timeout=5)
            _remove_stale_temporaries([outputs[i] for i in todo])
        seconds = time.perf_counter() - start
    finally:
        journal.close()
        if own_cluster is not None:
            client.close()
            own_cluster.close()

    stage_ms: dict[str, tuple] = {}
    for r in results:
        for stage, wall, device in r.stages:
            count, w, d = stage_ms.get(stage, (0, 0.0, 0.0))
            stage_ms[stage] = (count + 1, w + wall, d + device)
    return BatchSummary(frames=len(inputs), processed=sum(1 for r in results if r.ok and not r.skipped),
                        skipped=sum(1 for r in results if r.skipped), failures=[r for r in results if not r.ok],
                        seconds=seconds if todo else 0.0, workers=worker_count, stage_ms=stage_ms,
                        results=results)
