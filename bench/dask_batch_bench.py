"""Frames per second of `devicearray.dask.process_frames` for 1 and 2 workers.

    python bench/dask_batch_bench.py [--frames 40] [--height 480 --width 640]
                                     [--workers 1,2] [--stages "--downsample 2x2 --voxel 5"] [--json OUT]

Writes synthetic organized frames (`devicearray synth`, one seed each) to a temporary
directory, then for each worker count starts the
local cluster the batch command would start (a LocalCUDACluster with one worker per GPU
when dask-cuda sees a GPU, else a LocalCluster of single-threaded worker processes),
warms every worker up on the frames once (device, kernel builds, memory pool) and times
a second full pass with resume off. Frames/s counts the frames of the timed pass over
its wall time, from the first task submitted to the last result: reading, the device
stages and writing included, the cluster's start-up not.

Needs the devicearray package (PYTHONPATH=<build>/python for a build tree), the
`devicearray` command and Dask (pip install 'devicearray[dask]').
"""

import argparse
import json
import os
import pathlib
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import distributed

import devicearray as da
from devicearray import dask as batch


def synth_command():
    """The `devicearray` command that makes the frames: $DEVICEARRAY_CLI, the build tree's
    (<build>/tools/devicearray next to <build>/python/devicearray), or the one on PATH."""
    if os.environ.get("DEVICEARRAY_CLI"):
        return os.environ["DEVICEARRAY_CLI"]
    built = pathlib.Path(da.__file__).resolve().parents[2] / "tools" / "devicearray"
    return str(built) if built.is_file() else shutil.which("devicearray")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=40)
    p.add_argument("--height", type=int, default=480)
    p.add_argument("--width", type=int, default=640)
    p.add_argument("--workers", default="1,2", help="comma-separated worker counts")
    p.add_argument("--stages", default="--downsample 2x2 --normals --voxel 5",
                   help="stage options of `devicearray process`, as one string")
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()
    stages = da.PipelineStages.parse(shlex.split(args.stages))
    counts = [int(c) for c in args.workers.split(",")]

    command = synth_command()
    if command is None:
        print("the devicearray command is needed to make the frames: set DEVICEARRAY_CLI", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="dask-batch-bench-") as tmp:
        frames = []
        for i in range(args.frames):
            path = pathlib.Path(tmp) / "in" / f"frame_{i:04d}.ply"
            path.parent.mkdir(exist_ok=True)
            subprocess.run([command, "synth", "-o", str(path), "-H", str(args.height), "-W", str(args.width),
                            "--seed", str(i + 1)], check=True, capture_output=True)
            frames.append(str(path))
        for workers in counts:
            cluster = batch.local_cluster(workers)
            with distributed.Client(cluster) as client:
                client.wait_for_workers(workers)
                out = pathlib.Path(tmp) / f"out-{workers}"
                batch.process_frames(frames, out, stages, client, resume=False)  # warm-up pass
                start = time.perf_counter()
                summary = batch.process_frames(frames, out, stages, client, resume=False)
                wall = time.perf_counter() - start
            cluster.close()
            if not summary.ok:
                print(summary, file=sys.stderr)
                return 1
            row = {"workers": workers, "frames": summary.processed, "seconds": summary.seconds,
                   "frames_per_second": summary.frames_per_second, "call_seconds": wall,
                   "cluster": type(cluster).__name__,
                   "stage_ms_per_frame": {k: v[1] / v[0] for k, v in summary.stage_ms.items()}}
            rows.append(row)
            print(f"{workers} worker(s) ({row['cluster']}): {summary.processed} frames of {args.height}x{args.width} "
                  f"in {summary.seconds:.3f} s = {summary.frames_per_second:.2f} frames/s", flush=True)

    device = da.ComputeDevice.default_device().to_string()
    report = {"host": platform.node(), "device": device, "height": args.height, "width": args.width,
              "stages": stages.to_arguments(), "results": rows}
    if len(rows) > 1 and rows[0]["frames_per_second"] > 0:
        print(f"scaling {rows[0]['workers']} -> {rows[-1]['workers']} workers: "
              f"{rows[-1]['frames_per_second'] / rows[0]['frames_per_second']:.2f}x")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
