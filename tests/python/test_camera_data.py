"""Camera data in and out: the PointCloud camera filters and RGB-D
(point_cloud_from_depth_image, project_to_rgbd_image) on every device, each checked
against a numpy reference written here from the documented definitions (docs/filters.md).

Tolerances as in tests/camera_filters_test.cpp: which points are removed or filled must
match exactly; coordinates 1e-5 relative + 1e-4 mm; filled colours within 1."""

import numpy as np
import pytest

import devicearray as da

F = da.Format


def scene(seed=0, h=30, w=40, holes=0.1):
    """Two planes with a 150 mm step, noise, holes and a few outliers, seen by a pinhole
    camera of focal length 100 px centred at (20, 15); linear RGBA and SNR."""
    rng = np.random.default_rng(seed)
    r, c = np.mgrid[0:h, 0:w].astype(np.float32)
    z = 800 + 0.5 * c + 0.3 * r + rng.uniform(-1, 1, (h, w)) + np.where(c >= w // 2, 150, 0)
    z = np.where(rng.random((h, w)) < 0.02, z - 120, z).astype(np.float32)
    xyz = np.stack([(c - 20) * z / 100, (r - 15) * z / 100, z], axis=-1).astype(np.float32)
    xyz[rng.random((h, w)) < holes] = np.nan
    rgba = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    snr = rng.uniform(0, 12, (h, w)).astype(np.float32)
    return xyz, rgba, snr


def upload(device, xyz, rgba, snr):
    return da.PointCloud(da.from_numpy(xyz, format=F.PointXYZ, device=device),
                         da.from_numpy(rgba, format=F.ColorRGBA, device=device),
                         da.from_numpy(snr, format=F.SNR, device=device))


def points(cloud):
    return cloud.device_points_xyz().to_numpy()


def assert_points(got, want):
    np.testing.assert_array_equal(np.isnan(got[..., 2]), np.isnan(want[..., 2]))
    ok = ~np.isnan(want[..., 2])
    np.testing.assert_allclose(got[ok], want[ok], rtol=1e-5, atol=1e-4)


def valid(xyz):
    return ~np.isnan(xyz).any(axis=-1)


def test_filter_noise_removes_low_snr(device):
    xyz, rgba, snr = scene(1)
    cloud = upload(device, xyz, rgba, snr)
    want = xyz.copy()
    want[~(snr >= 4)] = np.nan
    assert_points(points(cloud.noise_filtered(4.0)), want)
    stream = da.Stream(device)
    cloud.filter_noise(4.0, stream=stream)
    stream.wait_for_completion()
    assert_points(points(cloud), want)


def test_filter_outliers_matches_nearest_neighbour_reference(device):
    xyz, rgba, snr = scene(2)
    h, w, _ = xyz.shape
    want = xyz.copy()
    for r in range(h):
        for c in range(w):
            if not valid(xyz[r, c]):
                continue
            near = xyz[max(r - 1, 0):r + 2, max(c - 1, 0):c + 2].reshape(-1, 3)
            d = np.linalg.norm(near.astype(np.float64) - xyz[r, c], axis=1)
            d = d[~np.isnan(d) & (d > 0)]
            if not (d.size and d.min() <= 20):
                want[r, c] = np.nan
    cloud = upload(device, xyz, rgba, snr)
    assert_points(points(cloud.outliers_filtered(20.0)), want)
    cloud.filter_outliers(20.0)
    assert_points(points(cloud), want)


def test_smooth_depth_matches_reference_and_keeps_rays(device):
    xyz, rgba, snr = scene(3)
    h, w, _ = xyz.shape
    sigma, step, radius = 1.5, 10.0, 3
    want = xyz.copy()
    for r in range(h):
        for c in range(w):
            if not valid(xyz[r, c]):
                continue
            rs = slice(max(r - radius, 0), min(r + radius + 1, h))
            cs = slice(max(c - radius, 0), min(c + radius + 1, w))
            zs = xyz[rs, cs, 2].astype(np.float64)
            rr, cc = np.mgrid[rs, cs]
            wgt = np.exp(-((rr - r) ** 2 + (cc - c) ** 2) / (2 * sigma * sigma))
            use = ~np.isnan(zs) & (np.abs(zs - xyz[r, c, 2]) <= step)
            want[r, c] = xyz[r, c] * ((wgt[use] * zs[use]).sum() / wgt[use].sum() / xyz[r, c, 2])
    cloud = upload(device, xyz, rgba, snr)
    got = points(cloud.depth_smoothed(sigma, step, radius))
    assert_points(got, want)
    cloud.smooth_depth(sigma, max_depth_difference=step, radius=radius)
    assert_points(points(cloud), want)


def test_fill_holes_interpolates_short_gaps(device):
    xyz, rgba, snr = scene(4, holes=0.0)
    xyz[5, 10:13] = np.nan  # a gap of 3 in a row
    xyz[18:28, 25:35] = np.nan  # a 10 x 10 hole: too large for a size of 4 along rows and columns
    cloud = upload(device, xyz, rgba, snr)
    filled = cloud.holes_filled(4, 1000.0)
    got = points(filled)
    assert valid(got[5, 10:13]).all()
    assert not valid(got[22:24, 29:31]).any()
    # (5, 11) sits in the middle of a row gap of 3 and of a column gap of 1: the two linear
    # interpolations, each at t = 1/2, are averaged.
    ends = [(5, 9), (5, 13), (4, 11), (6, 11)]
    z = np.mean([np.float64(xyz[e][2]) for e in ends])
    np.testing.assert_allclose(got[5, 11, 2], z, rtol=1e-5)
    np.testing.assert_allclose(got[5, 11, 0] / got[5, 11, 2], (11 - 20) / 100, atol=1e-5)
    colours = filled.image_device_array(F.ColorRGBA).to_numpy()
    want = np.floor(np.mean([rgba[e].astype(np.float64) for e in ends], axis=0) + 0.5)
    assert np.abs(colours[5, 11].astype(int) - want).max() <= 1
    snrs = filled.device_snrs().to_numpy()
    np.testing.assert_allclose(snrs[5, 11], np.mean([np.float64(snr[e]) for e in ends]), rtol=1e-5)
    cloud.fill_holes(4, max_depth_difference=1000.0)
    assert_points(points(cloud), got)


def test_filters_refuse_bad_parameters(device):
    cloud = upload(device, *scene(5))
    with pytest.raises(ValueError):
        cloud.depth_smoothed(0.0)
    with pytest.raises(ValueError):
        cloud.holes_filled(0)
    with pytest.raises(ValueError):
        cloud.outliers_filtered(-1.0)


# --------------------------------------------------------------------- RGB-D --

CAMERA = dict(width=48, height=36, fx=50.0, fy=52.0, cx=23.6, cy=17.3)


def test_pinhole_camera_binding():
    cam = da.PinholeCamera(**CAMERA)
    assert (cam.width, cam.height, cam.fx, cam.cy) == (48, 36, 50.0, 17.3)
    assert "PinholeCamera(width=48" in repr(cam)
    with pytest.raises(ValueError):
        da.PinholeCamera(0, 10, 1, 1, 0, 0)


@pytest.mark.parametrize("as_numpy", [True, False], ids=["numpy", "gpumatnd"])
def test_u16_depth_round_trips_exactly(device, as_numpy):
    cam = da.PinholeCamera(**CAMERA)
    rng = np.random.default_rng(7)
    depth = rng.integers(500, 60000, (36, 48), dtype=np.uint16)
    depth[rng.random(depth.shape) < 0.1] = 0
    image = depth if as_numpy else da.from_numpy(depth, device=device)
    cloud = da.point_cloud_from_depth_image(image, 0.1, cam, device=device)
    xyz = points(cloud)
    r, c = np.mgrid[0:36, 0:48]
    z = depth * np.float64(np.float32(0.1))
    ok = depth > 0
    np.testing.assert_allclose(xyz[..., 2][ok], z[ok], rtol=1e-6)
    np.testing.assert_allclose(xyz[..., 0][ok], ((c - cam.cx) * z / cam.fx)[ok], rtol=1e-5, atol=1e-4)
    assert np.isnan(xyz[..., 2][~ok]).all()
    back = da.project_to_rgbd_image(cloud, cam, dtype="uint16", depth_scale=0.1)
    np.testing.assert_array_equal(back.depth.to_numpy(), depth)
    assert back.colors is None
    via_points = da.project_to_rgbd_image(cloud.to_unorganized_point_cloud(), cam, depth_scale=0.1)
    np.testing.assert_array_equal(via_points.depth.to_numpy(), depth)


def test_colour_image_and_float_depth(device):
    cam = da.PinholeCamera(**CAMERA)
    rng = np.random.default_rng(8)
    depth = rng.uniform(0.5, 3.0, (36, 48)).astype(np.float32)
    depth[::5, ::3] = 0
    rgb = rng.integers(0, 256, (36, 48, 3), dtype=np.uint8)
    colours = da.from_numpy(rgb, format=F.ColorRGB, device=device)
    stream = da.Stream(device)
    cloud = da.point_cloud_from_depth_image(depth, 1000.0, cam, colors=colours, device=device, stream=stream)
    out = da.project_to_rgbd_image(cloud, cam, dtype=np.float32, depth_scale=1000.0, stream=stream)
    stream.wait_for_completion()
    got = out.depth.to_numpy()
    ok = depth > 0
    np.testing.assert_allclose(got[ok], depth[ok], rtol=1e-6)
    assert np.isnan(got[~ok]).all()
    rgba = out.colors.to_numpy()
    np.testing.assert_array_equal(rgba[ok][:, :3], rgb[ok])
    assert (rgba[~ok] == 0).all()


def test_projection_nearest_point_wins(device):
    cam = da.PinholeCamera(**CAMERA)
    # Three points on the ray of pixel (row 10, column 20): the nearest wins, and of two
    # at the same depth the first.
    ray = np.array([(20 - cam.cx) / cam.fx, (10 - cam.cy) / cam.fy, 1.0], dtype=np.float64)
    pts = np.array([ray * 900, ray * 700, ray * 700, ray * 1200], dtype=np.float32)
    cols = np.array([[10, 0, 0, 255], [20, 0, 0, 255], [30, 0, 0, 255], [40, 0, 0, 255]], dtype=np.uint8)
    cloud = da.UnorganizedPointCloud(da.from_numpy(pts, format=F.PointXYZ, device=device),
                                     da.from_numpy(cols, format=F.ColorRGBA, device=device))
    shift = np.eye(4, dtype=np.float32)
    out = da.project_to_rgbd_image(cloud, cam, camera_from_cloud=shift)
    depth = out.depth.to_numpy()
    assert depth[10, 20] == 700 and (depth > 0).sum() == 1
    assert out.colors.to_numpy()[10, 20, 0] == 20
    with pytest.raises(ValueError):
        da.project_to_rgbd_image(cloud, cam, dtype="uint8")
    with pytest.raises(TypeError):
        da.project_to_rgbd_image(object(), cam)
