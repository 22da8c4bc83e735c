"""``devicearray batch``: the stages of ``devicearray process`` on a recorded dataset, on Dask.

    devicearray batch INPUTS... -o OUTDIR [stage options of process] [--format F]
                      [--scheduler local|ADDRESS] [--workers N] [--force] [--no-progress]
    python -m devicearray.batch ...          (the same command)

The ``devicearray`` command (C++) runs this module for its ``batch`` subcommand, with
the Python interpreter named by $DEVICEARRAY_PYTHON (default ``python3``), because Dask
lives in Python. INPUTS are frame files, glob patterns or manifests (text files listing
one path or pattern per line). Exit status: 0 when every frame is done, 1 when any
failed (or Dask is missing), 2 for usage errors.
"""

from __future__ import annotations

import argparse
import sys

_INSTALL_HINT = ("the batch command runs on Dask, which is not installed for this Python "
                 f"({sys.executable}): pip install 'devicearray[dask]' (dask, distributed; on CUDA machines also "
                 "'devicearray[dask-cuda]')")


class _StageOption(argparse.Action):
    """Collects a stage option as ``devicearray process`` spells it, in the order given;
    PipelineStages.parse reads the values (the parser the command uses)."""

    def __call__(self, parser, namespace, values, option_string=None):
        args = getattr(namespace, "stage_args", None) or []
        args.append(option_string)
        if values is not None and self.nargs != 0:
            args.append(values)
        namespace.stage_args = args


# The stage options of `devicearray process`, in its order: (option, metavar or None
# for a flag, help). PipelineStages.parse reads their values, as the command does.
_STAGE_OPTIONS = (
    ("--snr-threshold", "SNR", "points with an SNR below this become missing"),
    ("--remove-outliers", "MM", "points farther than this from every valid grid neighbour become missing"),
    ("--smooth", "SIGMA", "Gaussian smoothing of depth along the camera rays with this sigma (pixels), not across "
                          "depth steps larger than --max-depth-step"),
    ("--smooth-radius", "PIXELS", "window radius of --smooth (default ceil(2 sigma))"),
    ("--fill-holes", "N", "fill row and column gaps of at most N missing points by interpolation"),
    ("--max-depth-step", "MM", "depth difference that --smooth and --fill-holes treat as an edge (default 10)"),
    ("--downsample", "2x2|3x3|4x4", "block-average k x k points (SNR^2-weighted)"),
    ("--normals", None, "estimate normals from the grid and write them"),
    ("--normal-window", "N", "fit each normal's plane to this N x N window (odd, 3..15) instead of central "
                             "differences (needs --normals)"),
    ("--transform", "M", "affine 4x4 matrix: 16 comma-separated numbers, row-major, or a file holding them"),
    ("--roi", "ox,oy,oz,ax,ay,az,bx,by,bz,min,max", "oriented box; points outside become missing"),
    ("--unorganize", None, "keep only the valid points"),
    ("--statistical-outliers", "K,RATIO", "drop points whose mean distance to their K nearest points exceeds the "
                                          "mean by more than RATIO standard deviations (implies --unorganize)"),
    ("--radius-outliers", "MM,N", "drop points with fewer than N other points closer than MM (implies --unorganize)"),
    ("--voxel", "MM", "voxel size in mm: one point per occupied voxel (implies --unorganize)"),
    ("--min-points", "N", "drop voxels with fewer points"),
)


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Run the point-cloud pipeline of `devicearray process` on many frames, one Dask task per frame; "
                    "each output, in OUTDIR under its input's file name, is byte for byte what `devicearray process` "
                    "writes for that input. A rerun skips the frames already done with the same stages (resume).")
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="frame files (PLY, PCD or XYZ), glob patterns (quote them; ** recurses) or manifests listing "
                        "one path or pattern per line")
    p.add_argument("-o", "--output-dir", required=True, metavar="OUTDIR", help="directory of the outputs (created)")
    stages = p.add_argument_group("stages (as `devicearray process`)")
    for option, metavar, text in _STAGE_OPTIONS:
        if metavar is None:
            stages.add_argument(option, action=_StageOption, nargs=0, help=text)
        else:
            stages.add_argument(option, action=_StageOption, metavar=metavar, help=text)
    p.add_argument("--format", default="binary", choices=("binary", "ascii", "binary_big_endian"),
                   help="PLY encoding (default: binary)")
    p.add_argument("--scheduler", default="local", metavar="local|ADDRESS",
                   help="'local' (default) starts a cluster on this machine: a LocalCUDACluster (one worker per GPU) "
                        "when dask-cuda sees a GPU, else a LocalCluster; otherwise the address of a running "
                        "scheduler (e.g. tcp://host:8786), whose workers must see the same paths")
    p.add_argument("--workers", type=int, metavar="N",
                   help="workers of the local cluster (default: one per GPU; 1 without dask-cuda)")
    p.add_argument("--force", action="store_true", help="run every frame, also those already done")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(stage_args=None)
    return p


def main(argv: list[str] | None = None, prog: str = "devicearray batch") -> int:
    parser = _parser(prog)
    args = parser.parse_args(argv)
    if args.workers is not None and args.workers < 1:
        parser.error("--workers must be at least 1")
    if args.workers is not None and args.scheduler != "local":
        parser.error("--workers sizes the local cluster; a running scheduler has its own workers")

    import devicearray as da  # after parsing: --help works without the extension

    try:
        stages = da.PipelineStages.parse(args.stage_args or [])
    except ValueError as error:
        parser.error(str(error))
    try:
        from devicearray import dask as batch
    except ImportError:
        print(f"{prog}: error: {_INSTALL_HINT}", file=sys.stderr)
        return 1
    try:
        frames = batch.expand_inputs(args.inputs)
        for frame in frames:
            batch.output_path_for(frame, args.output_dir)  # an unsupported kind is a usage error
    except ValueError as error:
        parser.error(str(error))
    if not frames:
        parser.error("the inputs name no frame")

    client = None
    if args.scheduler != "local":
        import distributed
        client = distributed.Client(args.scheduler)
    try:
        summary = batch.process_frames(frames, args.output_dir, stages, client, format=args.format,
                                       resume=not args.force, progress=not args.no_progress and sys.stdout.isatty(),
                                       workers=args.workers)
    except ValueError as error:
        parser.error(str(error))
    finally:
        if client is not None:
            client.close()
    print(summary, flush=True)
    for failure in summary.failures:
        print(f"{prog}: error: {failure.input}: {failure.error}", file=sys.stderr)
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main(prog="python -m devicearray.batch"))
