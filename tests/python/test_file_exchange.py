"""Point-cloud and image files exchanged with other tools: da.read_point_cloud /
da.write_point_cloud (PLY, PCD, XYZ) and da.read_image / da.write_image (PNG).

Files written here open in plyfile, trimesh and Open3D with the same points, colours
and normals, and files those packages write open here; each such test skips with a
reason when its package is not installed."""

import struct
import warnings

import numpy as np
import pytest

import devicearray as da

F = da.Format


def make_organized(device, h=4, w=5):
    """An organized cloud with holes and colours; returns it and its host data."""
    rng = np.random.default_rng(3)
    xyz = np.empty((h, w, 3), np.float32)
    xyz[..., 0] = np.arange(w, dtype=np.float32)[None, :] * 10
    xyz[..., 1] = np.arange(h, dtype=np.float32)[:, None] * 10
    xyz[..., 2] = 500 + rng.uniform(0, 50, (h, w)).astype(np.float32)  # a gently curved surface
    xyz[0, 1] = np.nan
    xyz[h - 1, w - 2] = np.nan
    rgba = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    rgba[..., 3] = 255
    cloud = da.PointCloud(da.from_numpy(xyz, format=F.PointXYZ, device=device),
                          da.from_numpy(rgba, format=F.ColorRGBA, device=device))
    return cloud, xyz


def srgb_of(cloud):
    """The sRGB colours a file gets: the device's encoding of its linear colours."""
    return cloud.image_device_array(F.ColorRGBA_SRGB).to_numpy()


def organized_xyz(cloud):
    return cloud.device_points_xyz().to_numpy()


def srgb_encode(x):
    x = np.clip(x, 0.0, 1.0)
    return np.where(x <= 0.0031308, 12.92 * x, 1.055 * np.power(x, 1 / 2.4) - 0.055)


def srgb_decode(s):
    return np.where(s <= 0.04045, s / 12.92, np.power((s + 0.055) / 1.055, 2.4))


def assert_srgb_close(got, want):
    """sRGB codes after a trip through the device's 8-bit linear colours: within the
    spacing, in sRGB codes, of the linear codes next to the value (about one code in
    the bright half, several in dark shades)."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    linear = np.round(srgb_decode(want / 255) * 255)
    gap = 255 * (srgb_encode(np.minimum(linear + 1, 255) / 255) - srgb_encode(np.maximum(linear - 1, 0) / 255)) / 2
    assert np.all(np.abs(got - want) <= np.ceil(gap) + 1), np.abs(got - want).max()


def assert_same_points(got, want):
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])


# ------------------------------------------------------------ our round trips --

@pytest.mark.parametrize("ext", [".ply", ".pcd", ".xyz"])
@pytest.mark.parametrize("binary", [True, False], ids=["binary", "ascii"])
def test_organized_round_trip(device, tmp_path, ext, binary):
    cloud, xyz = make_organized(device)
    path = tmp_path / ("cloud" + ext)
    da.write_point_cloud(path, cloud, binary=binary)
    # XYZ declares no grid: it is stated on reading.
    kw = {"height": 4, "width": 5} if ext == ".xyz" else {}
    back = da.read_point_cloud(path, device=device, **kw)
    assert isinstance(back, da.PointCloud)
    assert (back.height(), back.width()) == (4, 5)
    assert_same_points(organized_xyz(back), xyz)
    want = srgb_of(cloud)
    got = srgb_of(back)
    if ext == ".xyz":  # XYZ holds no alpha
        want = want[..., :3]
        got = got[..., :3]
    np.testing.assert_array_equal(got, want)
    # Without the grid, an XYZ file gives the valid points.
    if ext == ".xyz":
        flat = da.read_point_cloud(str(path), device=device)
        assert isinstance(flat, da.UnorganizedPointCloud)
        assert flat.size() == 18


def test_unorganized_round_trip_and_linear_colours(device, tmp_path):
    cloud, xyz = make_organized(device)
    points = cloud.to_unorganized_point_cloud()
    for ext in (".ply", ".pcd"):
        path = tmp_path / ("points" + ext)
        da.write_point_cloud(path, points, color_space="linear")
        back = da.read_point_cloud(path, device=device, color_space="linear")
        assert isinstance(back, da.UnorganizedPointCloud)
        np.testing.assert_array_equal(back.device_points_xyz().to_numpy(), points.device_points_xyz().to_numpy())
        assert_srgb_close(back.device_colors(F.ColorRGBA_SRGB).to_numpy(),
                          points.device_colors(F.ColorRGBA_SRGB).to_numpy())
        # Read as sRGB, the file's linear codes are darker.
        as_srgb = da.read_point_cloud(path, device=device)
        assert (as_srgb.device_colors(F.ColorRGBA_SRGB).to_numpy()[:, :3].astype(int).sum()
                < points.device_colors(F.ColorRGBA_SRGB).to_numpy()[:, :3].astype(int).sum())


def test_normals_are_written_from_the_device(device, tmp_path):
    cloud, _ = make_organized(device)
    path = tmp_path / "normals.ply"
    da.write_point_cloud(path, cloud, binary=False, normals=True)
    text = path.read_text()
    header, body = text.split("end_header\n")
    assert "property float nx" in header
    values = np.array([[float(v) for v in line.split()] for line in body.splitlines()], np.float32)
    want = cloud.device_normals_xyz().to_numpy().reshape(-1, 3)
    got = values[:, 7:10]  # x y z r g b a nx ny nz
    ok = ~np.isnan(want).any(axis=1)
    assert ok.any()
    np.testing.assert_allclose(got[ok], want[ok], atol=1e-6)
    with pytest.raises(ValueError, match="no normals"):
        da.write_point_cloud(tmp_path / "u.ply", cloud.to_unorganized_point_cloud(), normals=True)


@pytest.mark.parametrize("ext", [".ply", ".pcd", ".xyz"])
def test_unorganized_normals_round_trip(device, tmp_path, ext):
    # The normals an unorganized cloud carries are written and read back as they were.
    points = make_organized(device, 12, 15)[0].to_unorganized_point_cloud()
    points.estimate_normals(10)
    want = points.device_normals_xyz().to_numpy().reshape(-1, 3)
    path = tmp_path / f"normals{ext}"
    da.write_point_cloud(path, points, normals=True)
    back = da.read_point_cloud(path, device=device)
    assert isinstance(back, da.UnorganizedPointCloud) and back.has_normals() and back.size() == points.size()
    got = back.device_normals_xyz().to_numpy().reshape(-1, 3)
    ok = ~np.isnan(want).any(axis=1)
    assert ok.sum() > 0.9 * len(want)
    np.testing.assert_allclose(got[ok], want[ok], atol=1e-6)
    np.testing.assert_array_equal(back.device_points_xyz().to_numpy(), points.device_points_xyz().to_numpy())


def test_bad_files_and_arguments(device, tmp_path):
    with pytest.raises(ValueError, match="extension"):
        da.read_point_cloud(tmp_path / "cloud.obj")
    bad = tmp_path / "bad.pcd"
    bad.write_bytes(b"VERSION 0.7\nFIELDS x y z\nSIZE 4 4 4\nTYPE F F F\nWIDTH 2\nDATA ascii\n1 2 3\n4 5 six\n")
    with pytest.raises(ValueError, match=r"bad\.pcd.*line 8.*six"):
        da.read_point_cloud(bad, device=device)
    cloud, _ = make_organized(device)
    with pytest.raises(ValueError, match="color_space"):
        da.write_point_cloud(tmp_path / "c.ply", cloud, color_space="adobe")
    with pytest.raises(TypeError):
        da.write_point_cloud(tmp_path / "c.ply", object())


def test_precision_loss_is_one_warning(device, tmp_path):
    path = tmp_path / "utm.ply"
    header = ("ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty double x\nproperty double y\n"
              "property double z\nend_header\n")
    body = struct.pack("<9d", 1.0, 2.0, 3.0, 500000.123, 4649776.224, 1.0, 500000.987, 4649776.5, 1.0)
    path.write_bytes(header.encode() + body)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        da.read_point_cloud(path, device=device)
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1 and "precision" in messages[0], messages


# ------------------------------------------------------------------- images --

def test_16_bit_depth_png_round_trip(device, tmp_path):
    depth = (np.arange(6 * 7, dtype=np.uint16).reshape(6, 7) * 1531) % 65535
    path = tmp_path / "depth.png"
    da.write_image(path, da.from_numpy(depth, device=device))
    back = da.read_image(path, device=device)
    assert isinstance(back, da.GpuMatND)
    np.testing.assert_array_equal(back.download(), depth)
    rgb16 = np.arange(2 * 3 * 3, dtype=np.uint16).reshape(2, 3, 3) * 3000
    da.write_image(tmp_path / "rgb16.png", da.from_numpy(rgb16, device=device))
    np.testing.assert_array_equal(da.read_image(tmp_path / "rgb16.png", device=device).download(), rgb16)


def test_8_bit_png_round_trip_through_frame2d(device, tmp_path):
    rgba = np.random.default_rng(5).integers(0, 256, (5, 6, 4), dtype=np.uint8)
    frame = da.Frame2D(da.convert(da.from_numpy(rgba, format=F.ColorRGBA_SRGB, device=device), F.ColorRGBA))
    path = tmp_path / "image.png"
    da.write_image(path, frame)
    back = da.read_image(path, device=device)
    assert isinstance(back, da.Frame2D)
    np.testing.assert_array_equal(back.image_device_array(F.ColorRGBA_SRGB).to_numpy(),
                                  frame.image_device_array(F.ColorRGBA_SRGB).to_numpy())
    with pytest.raises(ValueError):
        da.write_image(path, da.from_numpy(np.zeros((2, 2), np.float32), device=device))


# ---------------------------------------------------------- other packages --

def written_by_us(device, tmp_path, ext, binary=True):
    cloud, xyz = make_organized(device)
    path = tmp_path / ("ours" + ext)
    da.write_point_cloud(path, cloud, binary=binary, normals=True)
    normals = cloud.device_normals_xyz().to_numpy().reshape(-1, 3)
    return path, xyz.reshape(-1, 3), srgb_of(cloud).reshape(-1, 4), normals


@pytest.mark.parametrize("binary", [True, False], ids=["binary", "ascii"])
def test_plyfile_reads_ours(device, tmp_path, binary):
    plyfile = pytest.importorskip("plyfile", reason="plyfile is not installed")
    path, xyz, rgba, normals = written_by_us(device, tmp_path, ".ply", binary)
    v = plyfile.PlyData.read(str(path))["vertex"]
    got = np.stack([v["x"], v["y"], v["z"]], axis=1)
    assert_same_points(got, xyz)
    np.testing.assert_array_equal(np.stack([v["red"], v["green"], v["blue"], v["alpha"]], axis=1), rgba)
    ok = ~np.isnan(normals).any(axis=1)
    np.testing.assert_allclose(np.stack([v["nx"], v["ny"], v["nz"]], axis=1)[ok], normals[ok], atol=1e-6)


@pytest.mark.parametrize("text", [False, True], ids=["binary", "ascii"])
def test_ours_reads_plyfile(device, tmp_path, text):
    plyfile = pytest.importorskip("plyfile", reason="plyfile is not installed")
    n = 50
    rng = np.random.default_rng(9)
    vertex = np.zeros(n, dtype=[("x", "f8"), ("y", "f8"), ("z", "f8"), ("red", "u1"), ("green", "u1"),
                                ("blue", "u1"), ("intensity", "f4")])
    for k in "xyz":
        vertex[k] = rng.uniform(-100, 100, n)
    for k in ("red", "green", "blue"):
        vertex[k] = rng.integers(0, 256, n)
    path = tmp_path / "plyfile.ply"
    plyfile.PlyData([plyfile.PlyElement.describe(vertex, "vertex")], text=text).write(str(path))
    back = da.read_point_cloud(path, device=device)
    got = back.device_points_xyz().to_numpy()
    np.testing.assert_array_equal(got, np.stack([vertex["x"], vertex["y"], vertex["z"]], 1).astype(np.float32))
    assert_srgb_close(back.device_colors(F.ColorRGBA_SRGB).to_numpy()[:, :3],
                      np.stack([vertex["red"], vertex["green"], vertex["blue"]], 1))


def test_trimesh_reads_ours_and_ours_reads_trimesh(device, tmp_path):
    trimesh = pytest.importorskip("trimesh", reason="trimesh is not installed")
    path, xyz, rgba, _ = written_by_us(device, tmp_path, ".ply")
    loaded = trimesh.load(str(path))
    valid = ~np.isnan(xyz).any(axis=1)
    got = np.asarray(loaded.vertices, np.float32)
    colors = np.asarray(loaded.colors)
    if len(got) != len(xyz):  # trimesh may drop the missing (NaN) points
        xyz, rgba = xyz[valid], rgba[valid]
        valid = valid[valid]
    assert_same_points(got, xyz)
    np.testing.assert_array_equal(colors[valid], rgba[valid])

    pts = np.random.default_rng(1).uniform(-5, 5, (30, 3))
    colors = np.random.default_rng(2).integers(0, 256, (30, 4), dtype=np.uint8)
    out = tmp_path / "trimesh.ply"
    trimesh.PointCloud(pts, colors=colors).export(str(out))
    back = da.read_point_cloud(out, device=device)
    np.testing.assert_allclose(back.device_points_xyz().to_numpy(), pts.astype(np.float32), rtol=0, atol=0)
    assert_srgb_close(back.device_colors(F.ColorRGBA_SRGB).to_numpy()[:, :3], colors[:, :3])


@pytest.mark.parametrize("ext", [".ply", ".pcd"])
def test_open3d_reads_ours(device, tmp_path, ext):
    o3d = pytest.importorskip("open3d", reason="Open3D is not installed")
    path, xyz, rgba, normals = written_by_us(device, tmp_path, ext)
    pc = o3d.io.read_point_cloud(str(path), remove_nan_points=False)
    assert_same_points(np.asarray(pc.points, np.float32), xyz)
    valid = ~np.isnan(xyz).any(axis=1)
    np.testing.assert_allclose(np.asarray(pc.colors)[valid] * 255, rgba[valid, :3], atol=1e-3)
    ok = valid & ~np.isnan(normals).any(axis=1)
    np.testing.assert_allclose(np.asarray(pc.normals)[ok], normals[ok], atol=1e-6)


@pytest.mark.parametrize("ext,args", [(".ply", {}), (".ply", {"write_ascii": True}), (".pcd", {}),
                                      (".pcd", {"write_ascii": True}), (".pcd", {"compressed": True})])
def test_ours_reads_open3d(device, tmp_path, ext, args):
    o3d = pytest.importorskip("open3d", reason="Open3D is not installed")
    rng = np.random.default_rng(4)
    pts = rng.uniform(-1, 1, (40, 3))
    colors = rng.integers(0, 256, (40, 3)) / 255.0
    pc = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(pts))
    pc.colors = o3d.utility.Vector3dVector(colors)
    path = tmp_path / ("open3d" + ext)
    assert o3d.io.write_point_cloud(str(path), pc, **args)
    back = da.read_point_cloud(path, device=device)
    np.testing.assert_allclose(back.device_points_xyz().to_numpy(), pts.astype(np.float32), rtol=1e-6, atol=1e-6)
    assert_srgb_close(back.device_colors(F.ColorRGBA_SRGB).to_numpy()[:, :3], np.round(colors * 255))
