"""da.FrameLoop: numpy frames in flight give, frame by frame, what the blocking calls of
the same stages give (an independent chain: one call at a time, each waiting); earlier
frames survive later ones; the arrays of a frame are held until its upload ran; bad
frames and loops are refused with a clear ValueError, and the loop goes on."""
import gc
import sys

import numpy as np
import pytest

import devicearray as da
from devicearray import Format as F

from test_point_clouds import make_cloud

POSE = np.array([[0.8660254, -0.5, 0, 10], [0.5, 0.8660254, 0, -20], [0, 0, 1, 30], [0, 0, 0, 1]], np.float32)
POSE_TEXT = ",".join(f"{v:.9g}" for v in POSE.reshape(-1))


def frame(seed):
    """An organized frame: XYZ in mm (NaN holes), colours (taken as sRGB codes), SNR."""
    return make_cloud(36, 48, seed, holes=0.2)


def blocking_cloud(device, xyz, rgba, snr):
    return da.PointCloud(da.from_numpy(xyz, format=F.PointXYZ, device=device),
                         da.from_numpy(rgba, format=F.ColorRGBA_SRGB, device=device),
                         da.from_numpy(snr, format=F.SNR, device=device))


def test_each_frame_gives_the_blocking_calls_result(device):
    stages = da.PipelineStages.parse(["--downsample", "2x2", "--transform", POSE_TEXT, "--voxel", "25"])
    loop = da.FrameLoop(stages, device=device, frames_in_flight=2)
    assert loop.frames_in_flight == 2 and loop.device == device and loop.stages == stages
    frames = [frame(seed) for seed in range(5)]
    results = [loop.submit(*f) for f in frames]
    assert [r.index for r in results] == list(range(5)) and loop.submitted == 5
    loop.synchronize()
    for f, r in zip(frames, results):
        assert not r.is_organized and r.cloud is None and r.normals is None
        want = blocking_cloud(device, *f).downsampled(da.Downsampling.by2x2).transformed(POSE)
        want = want.to_unorganized_point_cloud().voxel_downsampled(25.0, 1)
        assert r.points.size() == want.size() > 0
        np.testing.assert_array_equal(r.points.device_points_xyz().to_numpy(), want.device_points_xyz().to_numpy())
        np.testing.assert_array_equal(r.points.device_snrs().to_numpy(), want.device_snrs().to_numpy())
        np.testing.assert_array_equal(r.points.device_colors(F.ColorRGBA_SRGB).to_numpy(),
                                      want.device_colors(F.ColorRGBA_SRGB).to_numpy())


def test_organized_frames_carry_their_normals(device):
    stages = da.PipelineStages(downsample="2x2", normals=True, normal_window=5)
    loop = da.FrameLoop(stages, device=device)
    xyz, rgba, snr = frame(11)
    r = loop.submit(xyz, rgba, snr)
    r.stream.wait_for_completion()
    assert r.is_organized and r.points is None
    want = blocking_cloud(device, xyz, rgba, snr).downsampled(da.Downsampling.by2x2)
    np.testing.assert_array_equal(r.cloud.device_points_xyz().to_numpy(), want.device_points_xyz().to_numpy())
    np.testing.assert_array_equal(r.normals.to_numpy(), want.device_normals_xyz(window_size=5).to_numpy())
    # ... and into the unorganized cloud, with their points.
    u = r.cloud.to_unorganized_point_cloud(normals=r.normals)
    valid = np.isfinite(want.device_points_xyz().to_numpy()).all(axis=-1)
    np.testing.assert_array_equal(u.device_normals_xyz().to_numpy(), r.normals.to_numpy()[valid])


def test_a_frames_arrays_are_held_until_its_stream_completes(device):
    stages = da.PipelineStages(downsample="2x2")
    loop = da.FrameLoop(stages, device=device, frames_in_flight=2)
    xyz, rgba, snr = frame(21)
    arrays = [xyz.copy(), rgba.copy(), snr.copy()]
    before = [sys.getrefcount(a) for a in arrays]
    r = loop.submit(*arrays)
    # The loop holds one more reference to each array until the frame's stream is done ...
    held = [sys.getrefcount(a) for a in arrays]
    assert all(h in (n, n + 1) for h, n in zip(held, before))
    if held != [n + 1 for n in before]:
        # ... which a small frame may be before submit() returns: each hold drops those
        # whose work has completed (PoCL on 16 cores ran the frame while the later
        # arrays were being held). Only then may a reference be gone.
        assert r.stream.query_if_complete()
    r.stream.wait_for_completion()
    assert [sys.getrefcount(a) for a in arrays] == before
    # ... so temporaries can go at once: their only references are the loop's.
    results = [loop.submit(xyz.copy(), rgba.copy(), snr.copy()) for _ in range(4)]
    gc.collect()
    loop.synchronize()
    want = blocking_cloud(device, xyz, rgba, snr).downsampled(da.Downsampling.by2x2).device_points_xyz().to_numpy()
    for f in [r, *results]:
        np.testing.assert_array_equal(f.cloud.device_points_xyz().to_numpy(), want)


def test_bad_loops_and_frames_are_refused_and_the_loop_goes_on(device):
    stages = da.PipelineStages.parse(["--snr-threshold", "2", "--downsample", "4x4"])
    with pytest.raises(ValueError, match="frames_in_flight"):
        da.FrameLoop(stages, device=device, frames_in_flight=0)
    with pytest.raises(ValueError, match="frames_in_flight"):
        da.FrameLoop(stages, device=device, frames_in_flight=65)
    loop = da.FrameLoop(stages, device=device)
    xyz, rgba, snr = frame(31)
    with pytest.raises(ValueError, match=r"xyz must have shape \(H, W, 3\), not \(36, 48\)"):
        loop.submit(xyz[..., 0], rgba, snr)
    with pytest.raises(ValueError, match="xyz must be float32, not float64"):
        loop.submit(xyz.astype(np.float64), rgba, snr)
    with pytest.raises(ValueError, match=r"colors must have shape \(H, W, 4\)"):
        loop.submit(xyz, rgba[..., :3], snr)
    with pytest.raises(ValueError, match="snrs is 35 x 48; xyz is 36 x 48"):
        loop.submit(xyz, rgba, snr[1:])
    with pytest.raises(ValueError, match="--snr-threshold needs SNR"):
        loop.submit(xyz, rgba)
    with pytest.raises(ValueError, match="at least 4 rows and columns"):
        loop.submit(xyz[:3, :3], rgba[:3, :3], snr[:3, :3])
    assert loop.submitted == 0
    r = loop.submit(xyz, rgba, snr)
    assert r.index == 0
    r.stream.wait_for_completion()
    want = blocking_cloud(device, xyz, rgba, snr)
    want.filter_noise(2.0)
    want.downsample(da.Downsampling.by4x4)
    np.testing.assert_array_equal(r.cloud.device_points_xyz().to_numpy(), want.device_points_xyz().to_numpy())
