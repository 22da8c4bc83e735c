"""The frame pipeline of bench/pointcloud_bench.cpp — downsample 2x2 (SNR^2-weighted)
-> normals -> transform -> ROI box -> compaction -> 10 mm voxel grid — written twice
more and timed in one process for bench/compare.py:

- with PyTorch as a careful PyTorch user writes it (reshape-based block mean,
  central differences and torch.linalg.cross for normals, one matmul, a boolean
  mask for the box and for compaction, torch.unique + index_add_ for the voxels);
- through devicearray's Python API on one stream;

and measures what a Python caller pays per call (a transform, enqueued and blocking)
and the frames/s that `devicearray process --frames` sustains with frames in flight.

Both read the scene that `devicearray synth` writes for the camera size (the C++
benchmark's scene at 1920x1200), and both are timed like the C++ benchmark: one
pipeline between two device events after a synchronization.
"""

from __future__ import annotations

import math
import subprocess
import tempfile
from pathlib import Path

import numpy as np

VOXEL_MM = 10.0
# The C++ benchmark's camera-to-robot pose: a 40-degree tilt about x and a translation (mm).
_C, _S = math.cos(0.6981317), math.sin(0.6981317)
POSE = np.array([[1, 0, 0, 25.0], [0, _C, -_S, 300.0], [0, _S, _C, -1100.0], [0, 0, 0, 1]], np.float32)
SIZES = ((1200, 1920), (2048, 2448))


def read_synth_ply(path: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """XYZ (H, W, 3) float32, RGBA (H, W, 4) uint8 and SNR (H, W) float32 of the binary
    PLY `devicearray synth` writes (x y z red green blue alpha snr per vertex)."""
    data = path.read_bytes()
    end = data.index(b"end_header\n") + len(b"end_header\n")
    header = data[:end].decode("ascii").splitlines()
    height = next(int(l.split()[2]) for l in header if l.startswith("obj_info height"))
    width = next(int(l.split()[2]) for l in header if l.startswith("obj_info width"))
    record = np.dtype([("xyz", "<f4", 3), ("rgba", "u1", 4), ("snr", "<f4")])
    v = np.frombuffer(data, record, count=height * width, offset=end)
    return (v["xyz"].reshape(height, width, 3).copy(), v["rgba"].reshape(height, width, 4).copy(),
            v["snr"].reshape(height, width).copy())


def synth_scene(cli: Path, height: int, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    with tempfile.TemporaryDirectory(prefix="da-pipeline-") as tmp:
        path = Path(tmp) / "scene.ply"
        subprocess.run([str(cli), "synth", "-H", str(height), "-W", str(width), "-o", str(path)], check=True,
                       stdout=subprocess.DEVNULL)
        return read_synth_ply(path)


def central_box(xyz: np.ndarray) -> tuple[list, list, list, float, float]:
    """The C++ benchmark's ROI: the middle half (quartiles) of the posed valid points
    on each axis, as (origin, point A, point B, min extent, max extent)."""
    p = xyz.reshape(-1, 3)
    p = p[np.isfinite(p).all(axis=1)].astype(np.float64)
    posed = p @ POSE[:3, :3].T.astype(np.float64) + POSE[:3, 3]
    lo = np.quantile(posed, 0.25, axis=0, method="lower").astype(np.float32)
    hi = np.quantile(posed, 0.75, axis=0, method="lower").astype(np.float32)
    return ([lo[0], lo[1], lo[2]], [hi[0], lo[1], lo[2]], [lo[0], hi[1], lo[2]], 0.0, max(float(hi[2] - lo[2]), 1.0))


# ------------------------------------------------------------------ PyTorch ---

def torch_pipeline(torch, xyz, rgba, snr, pose, box, voxel: float = VOXEL_MM):
    """The pipeline in plain PyTorch; returns (voxel xyz, colours, SNR, normals)."""
    h, w = xyz.shape[0] // 2, xyz.shape[1] // 2
    # Downsample 2x2: SNR^2-weighted mean of the valid points of each block (plain mean
    # when the weights are all 0), mean colour, SNR = sqrt(sum SNR^2).
    blocks = xyz[: 2 * h, : 2 * w].reshape(h, 2, w, 2, 3)
    valid = torch.isfinite(blocks).all(dim=-1)
    snr2 = snr[: 2 * h, : 2 * w].reshape(h, 2, w, 2).square()
    weight = torch.where(valid & torch.isfinite(snr2), snr2, 0.0)
    points = torch.where(valid[..., None], blocks, 0.0)
    wsum = weight.sum(dim=(1, 3))
    count = valid.sum(dim=(1, 3))
    weighted = (points * weight[..., None]).sum(dim=(1, 3)) / wsum[..., None]
    plain = points.sum(dim=(1, 3)) / count[..., None]
    cloud = torch.where((wsum > 0)[..., None], weighted, plain)
    cloud = torch.where((count > 0)[..., None], cloud, float("nan"))
    colors = ((rgba[: 2 * h, : 2 * w].reshape(h, 2, w, 2, 4).sum(dim=(1, 3), dtype=torch.int32) + 2) // 4).to(torch.uint8)
    snrs = wsum.sqrt()
    # Normals: cross product of central differences, towards the camera (the origin).
    dx = cloud[1:-1, 2:] - cloud[1:-1, :-2]
    dy = cloud[2:, 1:-1] - cloud[:-2, 1:-1]
    n = torch.nn.functional.normalize(torch.linalg.cross(dx, dy), dim=-1)
    n = torch.where(((n * cloud[1:-1, 1:-1]).sum(dim=-1) > 0)[..., None], -n, n)
    normals = torch.full_like(cloud, float("nan"))
    normals[1:-1, 1:-1] = n
    # Transform, then the ROI box: points outside become missing.
    cloud = cloud @ pose[:3, :3].T + pose[:3, 3]
    origin, a, b, lo, hi = box
    u, v = a - origin, b - origin
    lu, lv = u.norm(), v.norm()
    u, v = u / lu, v / lv
    nz = torch.linalg.cross(u, v)
    d = cloud - origin
    pu, pv, pn = d @ u, d @ v, d @ nz
    inside = (pu >= 0) & (pu <= lu) & (pv >= 0) & (pv <= lv) & (pn >= lo) & (pn <= hi)
    cloud = torch.where(inside[..., None], cloud, float("nan"))
    # Compaction: the valid points, their colours and SNR.
    keep = torch.isfinite(cloud).all(dim=-1)
    pts, cols, s = cloud[keep], colors[keep], snrs[keep]
    # Voxel grid anchored at the min corner: weighted mean, mean colour, sqrt(sum SNR^2).
    idx = ((pts - pts.amin(dim=0)) / voxel).floor().to(torch.int64)
    key = (idx[:, 0] << 42) | (idx[:, 1] << 21) | idx[:, 2]
    voxels, inverse, counts = torch.unique(key, return_inverse=True, return_counts=True)
    m = voxels.numel()
    wv = torch.where(torch.isfinite(s), s.square(), 0.0)
    vw = torch.zeros(m, device=pts.device).index_add_(0, inverse, wv)
    vxyz = torch.zeros(m, 3, device=pts.device).index_add_(0, inverse, pts * wv[:, None])
    uxyz = torch.zeros(m, 3, device=pts.device).index_add_(0, inverse, pts)
    vxyz = torch.where((vw > 0)[:, None], vxyz / vw[:, None], uxyz / counts[:, None])
    vcol = torch.zeros(m, 4, dtype=torch.int32, device=pts.device).index_add_(0, inverse, cols.to(torch.int32))
    vcol = ((vcol + counts[:, None] // 2) // counts[:, None]).to(torch.uint8)
    return vxyz, vcol, vw.sqrt(), normals


def measure(m, Result, Timer, build: Path, min_time: float) -> None:
    """Adds, for each camera size, the PyTorch pipeline ("torch", "pc_pipeline") and the
    devicearray pipeline through Python ("python", "pc_pipeline") as device time, and
    `Result` and `Timer` are compare.py's result record and event timer."""
    import sys

    import torch

    if (build / "python").is_dir():
        sys.path.insert(0, str(build / "python"))
    import devicearray as da

    if not torch.cuda.is_available():
        raise RuntimeError("torch has no CUDA device")
    device = da.ComputeDevice.default_device()
    if device.backend() != da.ComputeBackend.cuda:
        raise RuntimeError(f"the default device is {device}, not CUDA")
    dev = torch.device("cuda", device.ordinal())
    cli = build / "tools" / "devicearray"
    for height, width in SIZES:
        xyz, rgba, snr = synth_scene(cli, height, width)
        box = central_box(xyz)
        frame = height * width

        tstream = torch.cuda.Stream(dev)
        txyz, trgba, tsnr = (torch.from_numpy(a).to(dev) for a in (xyz, rgba, snr))
        tpose = torch.from_numpy(POSE).to(dev)
        tbox = tuple(torch.tensor(c, dtype=torch.float32, device=dev) for c in box[:3]) + box[3:]

        def run_torch():
            with torch.cuda.stream(tstream):
                torch_pipeline(torch, txyz, trgba, tsnr, tpose, tbox)

        timer = Timer(lambda: torch.cuda.Event(enable_timing=True), lambda e: e.record(tstream),
                      torch.cuda.synchronize, lambda a, b: a.elapsed_time(b), min_time)
        m.add(Result("torch", "pc_pipeline", frame, timer.device_seconds(run_torch)))

        cloud = da.PointCloud(da.from_numpy(xyz, format=da.Format.PointXYZ, device=device),
                              da.from_numpy(rgba, format=da.Format.ColorRGBA, device=device),
                              da.from_numpy(snr, format=da.Format.SNR, device=device))
        roi = da.RegionOfInterestBox(*box)
        stream = da.Stream(device)
        pose = POSE.tolist()

        def run_ours():
            c = cloud.downsampled(da.Downsampling.by2x2, stream=stream)
            c.device_normals_xyz(stream=stream)
            c.transform(pose, stream=stream)
            c.mask_by_region_of_interest(roi, stream=stream)
            return c.voxel_downsampled(VOXEL_MM, 1, stream=stream)  # no compaction before the grid

        # Same work on both sides: the voxel counts agree (up to points on a box or
        # voxel boundary, where the two round differently).
        theirs = torch_pipeline(torch, txyz, trgba, tsnr, tpose, tbox)[0].shape[0]
        m.notes.append(f"pipeline {width}×{height}: {run_ours().size()} voxels (devicearray), {theirs} (PyTorch)")

        timer = Timer(lambda: da.Event(device), lambda e: e.record(stream), stream.wait_for_completion,
                      da.Event.elapsed_time, min_time)
        m.add(Result("python", "pc_pipeline", frame, timer.device_seconds(run_ours)))

        if frame == SIZES[0][0] * SIZES[0][1]:
            measure_call_costs(m, Result, Timer, da, device, cloud.downsampled(da.Downsampling.by2x2), pose, min_time)
        measure_streaming(m, Result, cli, device, xyz, box, frame)


def measure_call_costs(m, Result, Timer, da, device, cloud, pose, min_time: float) -> None:
    """Host time of one Python call of `transformed` on a 960x600 cloud: with a stream
    (enqueue only) and blocking, beside the device time of the same work."""
    import time

    stream = da.Stream(device)
    timer = Timer(lambda: da.Event(device), lambda e: e.record(stream), stream.wait_for_completion,
                  da.Event.elapsed_time, min_time)
    m.add(Result("python", "transformed_device", None, timer.device_seconds(lambda: cloud.transformed(pose,
                                                                                                      stream=stream))))

    def host_seconds(call, per_sync):
        best = math.inf
        deadline = time.perf_counter() + max(min_time, 0.05)
        while time.perf_counter() < deadline:
            stream.wait_for_completion()
            t0 = time.perf_counter()
            for _ in range(per_sync):
                call()
            best = min(best, (time.perf_counter() - t0) / per_sync)
        stream.wait_for_completion()
        return best

    # A handful of enqueued calls between synchronizations: the queue never fills.
    m.add(Result("python", "transformed_stream_host", None, host_seconds(lambda: cloud.transformed(pose,
                                                                                                   stream=stream), 8)))
    m.add(Result("python", "transformed_blocking_host", None, host_seconds(lambda: cloud.transformed(pose), 1)))


def measure_streaming(m, Result, cli: Path, device, xyz, box, frame: int, frames: int = 200, in_flight: int = 3) -> None:
    """Frames/s of `devicearray process --frames` (a FrameLoop: upload -> the pipeline's
    stages per frame, `in_flight` frames at a time) on the scene of this size, from
    pageable host frames (the memory the file was read into) and from page-locked ones
    (--pinned-frames)."""
    import re

    height, width = xyz.shape[:2]
    origin, a, b, lo, hi = box
    roi = ",".join(f"{v:.9g}" for v in (*origin, *a, *b, lo, hi))
    pose = ",".join(f"{v:.9g}" for v in POSE.reshape(-1))
    with tempfile.TemporaryDirectory(prefix="da-stream-") as tmp:
        scene = Path(tmp) / "scene.ply"
        subprocess.run([str(cli), "synth", "-H", str(height), "-W", str(width), "-o", str(scene)], check=True,
                       stdout=subprocess.DEVNULL)
        for name, extra in (("frames_per_second", []), ("frames_per_second_pinned", ["--pinned-frames"])):
            run = subprocess.run([str(cli), "process", str(scene), "--downsample", "2x2", "--normals", "--transform",
                                  pose, f"--roi={roi}", "--voxel", str(VOXEL_MM), "--frames", str(frames),
                                  "--in-flight", str(in_flight), *extra, "--device", f"cuda:{device.ordinal()}",
                                  "-o", str(Path(tmp) / "out.ply")], capture_output=True, text=True, check=True)
            found = re.search(r"([0-9.]+) frames/s", run.stdout)
            if not found:
                raise RuntimeError(f"no frames/s in the output of process --frames: {run.stdout[-300:]}")
            m.add(Result("cli", name, frame, 1.0 / float(found.group(1)),
                         counters={"frames_per_second": float(found.group(1)), "in_flight": in_flight,
                                   "frame_bytes": float(frame * 20)}))

