"""An overlapped frame loop: camera frames go up to the GPU, through the pipeline and on to
PyTorch, several frames in flight.

da.FrameLoop enqueues each frame's upload and stages on a stream of its own and returns
at once (it waits only for a free slot), so the upload of one frame overlaps the
stages of the ones before it. The camera writes into a ring of page-locked host
buffers (torch's pin_memory), one more than the frames in flight: a buffer is
rewritten only after the submit that reuses its frame's slot has returned, which
means its upload has run. Each finished frame's voxels go to PyTorch without a copy.

Run: PYTHONPATH=<build>/python python3 examples/python/frame_loop_to_torch.py
"""

import collections
import sys
import time

import numpy as np

import devicearray as da

HEIGHT, WIDTH = 600, 960
FRAMES, IN_FLIGHT = 60, 3
VOXEL_MM = 8.0


def camera_frame(i: int, out_xyz: np.ndarray, out_snr: np.ndarray) -> None:
    """Frame i of a tilted plane 800 mm away that drifts 1 mm a frame, with holes."""
    rows, cols = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float32)
    out_xyz[..., 0] = (cols - WIDTH / 2) * 0.8 + i
    out_xyz[..., 1] = (rows - HEIGHT / 2) * 0.8
    out_xyz[..., 2] = 800.0 + 0.2 * out_xyz[..., 0]
    out_xyz[(rows.astype(int) * 7 + cols.astype(int) * 3 + i) % 11 == 0] = np.nan
    out_snr[...] = 5.0


def main() -> int:
    try:
        import torch
    except ImportError:
        print("skipped: PyTorch is not installed")
        return 0
    cuda = [d for d in da.ComputeDevice.all() if d.backend() == da.ComputeBackend.cuda]
    if not cuda or not torch.cuda.is_available():
        print("skipped: no CUDA device for devicearray and PyTorch")
        return 0
    device = cuda[0]

    stages = da.PipelineStages(downsample="2x2", normals=True, normal_window=5, voxel_size=VOXEL_MM)
    loop = da.FrameLoop(stages, device=device, frames_in_flight=IN_FLIGHT)
    # The camera's ring of page-locked buffers: one more than the frames in flight.
    ring = [(torch.empty((HEIGHT, WIDTH, 3), dtype=torch.float32, pin_memory=True).numpy(),
             torch.empty((HEIGHT, WIDTH), dtype=torch.float32, pin_memory=True).numpy())
            for _ in range(IN_FLIGHT + 1)]

    centroids = {}
    pending = collections.deque()

    def hand_off(frame: da.LoopFrame) -> None:
        """A finished frame's voxels to PyTorch, zero-copy, ordered after the frame's stream."""
        frame.stream.wait_for_completion()  # its point count is then known without a wait
        voxels = torch.from_dlpack(frame.points.device_points_xyz(stream=frame.stream))
        centroids[frame.index] = voxels.double().mean(dim=0).cpu().numpy()

    start = time.perf_counter()
    for i in range(FRAMES):
        xyz, snr = ring[i % len(ring)]
        camera_frame(i, xyz, snr)
        pending.append(loop.submit(xyz, snrs=snr))
        # Frames older than those in flight are done (submit waited for their slots).
        while len(pending) > IN_FLIGHT - 1:
            hand_off(pending.popleft())
    while pending:
        hand_off(pending.popleft())
    seconds = time.perf_counter() - start

    # Each frame against the blocking calls on the same frame, one at a time.
    xyz, snr = np.empty((HEIGHT, WIDTH, 3), np.float32), np.empty((HEIGHT, WIDTH), np.float32)
    for i in (0, FRAMES // 2, FRAMES - 1):
        camera_frame(i, xyz, snr)
        cloud = da.PointCloud(da.from_numpy(xyz, format=da.Format.PointXYZ, device=device), None,
                              da.from_numpy(snr, format=da.Format.SNR, device=device))
        cloud.downsample(da.Downsampling.by2x2)
        want = cloud.to_unorganized_point_cloud().voxel_downsampled(VOXEL_MM, 1).device_points_xyz().to_numpy()
        np.testing.assert_allclose(centroids[i], want.astype(np.float64).mean(axis=0), rtol=1e-9, atol=1e-6)
    # The plane drifts 1 mm a frame in x: so do the centroids.
    drift = centroids[FRAMES - 1][0] - centroids[0][0]
    assert abs(drift - (FRAMES - 1)) < 2.0, drift

    print(f"{device}: {FRAMES} frames of {HEIGHT}x{WIDTH} in {seconds:.3f} s, {FRAMES / seconds:.0f} frames/s "
          f"({IN_FLIGHT} in flight), each frame's voxels handed to PyTorch; ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
