"""Where a frame's device time goes: every kernel, memset and copy of the frame
pipeline (and of the voxel stage alone), with its duration and the idle gap before it,
from CUPTI through the PyTorch profiler (the device image has no Nsight Systems).

The calls are enqueued behind a kernel that spins for about a millisecond on the same
stream, as the C++ benchmark's queued_us times them, so the device runs them back to
back and the gaps are the device's own, not the host's. Prints one table per workload, the last of
--frames runs (the first builds programs and pools).

  PYTHONPATH=BUILD/python python3 scripts/device/kernel_timeline.py --cli BUILD/tools/devicearray
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import pipeline_peers as peers  # noqa: E402  (the scene and box of the benchmark)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", type=Path, required=True, help="the devicearray command (it synthesizes the scene)")
    parser.add_argument("--size", default="1200x1920", help="camera HEIGHTxWIDTH")
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--trace", type=Path, help="also write the Chrome trace here")
    args = parser.parse_args()

    import devicearray as da
    import torch
    from torch.profiler import ProfilerActivity, profile

    height, width = (int(v) for v in args.size.split("x"))
    device = da.ComputeDevice.cuda(0)
    xyz, rgba, snr = peers.synth_scene(args.cli, height, width)
    box = da.RegionOfInterestBox(*peers.central_box(xyz))
    cloud = da.PointCloud(da.from_numpy(xyz, format=da.Format.PointXYZ, device=device),
                          da.from_numpy(rgba, format=da.Format.ColorRGBA, device=device),
                          da.from_numpy(snr, format=da.Format.SNR, device=device))
    pose = peers.POSE.tolist()
    tstream = torch.cuda.Stream()
    stream = da.Stream.wrap(device, tstream.cuda_stream)

    def pipeline():
        c = cloud.downsampled(da.Downsampling.by2x2, stream=stream)
        c.device_normals_xyz(stream=stream)
        c.transform(pose, stream=stream)
        c.mask_by_region_of_interest(box, stream=stream)
        return c.voxel_downsampled(peers.VOXEL_MM, 1, stream=stream)

    masked = cloud.downsampled(da.Downsampling.by2x2)
    masked.transform(pose)
    masked.mask_by_region_of_interest(box)
    unorganized = masked.to_unorganized_point_cloud()

    workloads = {
        "pipeline": pipeline,
        "voxel stage (compacted cloud)": lambda: unorganized.voxel_downsampled(peers.VOXEL_MM, 1, stream=stream),
        "unorganize": lambda: masked.to_unorganized_point_cloud(stream=stream),
    }
    for name, body in workloads.items():
        for _ in range(2):  # warm-up outside the trace: programs, pools, key-width guesses
            # Reading the result's point count, as a frame loop and the C++ benchmark do,
            # also hands the voxel grid's key width back to the next grid's sort.
            body().size()
        tstream.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.frames):
                with torch.cuda.stream(tstream):
                    torch.cuda._sleep(2_000_000)  # ~1 ms of clock cycles: the device waits while the host enqueues
                body()
                tstream.synchronize()
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "trace.json"
            prof.export_chrome_trace(str(path))
            trace = json.loads(path.read_text())
            if args.trace:
                (args.trace.parent / f"{args.trace.stem}-{name.split()[0]}.json").write_text(path.read_text())
        print_last_frame(name, trace)
    return 0


def print_last_frame(name: str, trace: dict) -> None:
    ops = sorted((e for e in trace["traceEvents"]
                  if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memset", "gpu_memcpy")),
                 key=lambda e: e["ts"])
    # The frame starts after the last delay (the spinning kernel).
    starts = [i for i, e in enumerate(ops) if e.get("cat") == "kernel" and e["dur"] > 100]
    if not starts:
        print(f"== {name}: no delay found in the trace")
        return
    frame = ops[starts[-1] + 1:]
    if not frame:
        print(f"== {name}: no work after the delay")
        return
    begin = ops[starts[-1]]["ts"] + ops[starts[-1]]["dur"]
    end = max(e["ts"] + e["dur"] for e in frame)
    busy = sum(e["dur"] for e in frame)
    print(f"== {name}: {len(frame)} operations, span {end - begin:.1f} us, busy {busy:.1f} us, "
          f"idle {end - begin - busy:.1f} us")
    print(f"{'start':>8} {'gap':>6} {'dur':>7}  operation")
    last = begin
    for e in frame:
        label = e["name"] if e.get("cat") == "kernel" else f"[{e['cat']}] {e['name']}"
        print(f"{e['ts'] - begin:8.1f} {e['ts'] - last:6.1f} {e['dur']:7.1f}  {label[:110]}")
        last = e["ts"] + e["dur"]


if __name__ == "__main__":
    raise SystemExit(main())
