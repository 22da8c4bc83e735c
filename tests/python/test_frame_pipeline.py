"""PipelineStages and process_ply_file: the stages of `devicearray process` from Python.
The options read as the command reads them, and a file written by process_ply_file is
byte for byte the file the command writes for the same input and options (compared
with the built command where there is one)."""

import math
import os
import pathlib
import pickle
import subprocess

import numpy as np
import pytest

import devicearray as da

RIGID = "0.8660254,-0.5,0,10,0.5,0.8660254,0,-20,0,0,1,30,0,0,0,1"
WIDE_ROI = "-2000,-2000,0,2000,-2000,0,-2000,2000,0,0,5000"


def command_path():
    """The built `devicearray` command: $DEVICEARRAY_CLI, else <build>/tools/devicearray
    next to the staged package (<build>/python/devicearray), else None."""
    env = os.environ.get("DEVICEARRAY_CLI")
    if env:
        return pathlib.Path(env)
    candidate = pathlib.Path(da.__file__).resolve().parents[2] / "tools" / "devicearray"
    return candidate if candidate.is_file() else None


def write_scene(path, height=40, width=56, seed=5):
    """An organized binary PLY written here: a tilted, bumpy surface 1 m away with holes,
    sRGB colours and SNR, so every stage has something to do."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[0:height, 0:width].astype(np.float32)
    z = 1000 + 3 * rows + 2 * cols + 5 * np.sin(cols / 3) + rng.normal(0, 0.5, (height, width))
    x = (cols - width / 2) * z / 500
    y = (rows - height / 2) * z / 500
    xyz = np.stack([x, y, z], axis=-1).astype(np.float32)
    xyz[rng.random((height, width)) < 0.05] = np.nan
    vertex = np.empty(height * width, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("red", "u1"), ("green", "u1"),
                                             ("blue", "u1"), ("alpha", "u1"), ("snr", "<f4")])
    flat = xyz.reshape(-1, 3)
    vertex["x"], vertex["y"], vertex["z"] = flat[:, 0], flat[:, 1], flat[:, 2]
    colours = rng.integers(0, 256, (height * width, 3), dtype=np.uint8)
    vertex["red"], vertex["green"], vertex["blue"] = colours[:, 0], colours[:, 1], colours[:, 2]
    vertex["alpha"] = 255
    vertex["snr"] = rng.uniform(1, 50, height * width).astype(np.float32)
    header = (f"ply\nformat binary_little_endian 1.0\nobj_info height {height}\nobj_info width {width}\n"
              f"element vertex {height * width}\nproperty float x\nproperty float y\nproperty float z\n"
              "property uchar red\nproperty uchar green\nproperty uchar blue\nproperty uchar alpha\n"
              "property float snr\nend_header\n")
    pathlib.Path(path).write_bytes(header.encode() + vertex.tobytes())


# --------------------------------------------------------------- the stages --

def test_parse_reads_every_option():
    s = da.PipelineStages.parse(["--downsample", "2x2", "--normals", "--transform", RIGID, f"--roi={WIDE_ROI}",
                                 "--unorganize", "--voxel", "5", "--min-points", "2"])
    assert s.downsample == da.Downsampling.by2x2
    assert s.normals and s.unorganize
    assert s.transform.shape == (4, 4) and s.transform.dtype == np.float32
    assert s.transform[0, 3] == 10 and s.transform[1, 0] == np.float32(0.5)
    assert list(s.roi.origin) == [-2000, -2000, 0] and s.roi.max_extent == 5000
    assert s.voxel_size == 5 and s.min_points_per_voxel == 2
    assert s.stage_count() == 6 and s.unorganizes() and s.needs_organized_input()
    empty = da.PipelineStages.parse([])
    assert empty == da.PipelineStages()
    assert empty.downsample is None and empty.transform is None and empty.roi is None and empty.voxel_size is None
    assert empty.stage_count() == 0 and empty.to_arguments() == []


def test_keywords_build_the_same_stages_as_the_options():
    transform = np.array([float(v) for v in RIGID.split(",")], dtype=np.float32).reshape(4, 4)
    roi = da.RegionOfInterestBox((-2000, -2000, 0), (2000, -2000, 0), (-2000, 2000, 0), 0, 5000)
    by_keyword = da.PipelineStages(downsample="2x2", normals=True, transform=transform, roi=roi, voxel_size=10.0,
                                   min_points_per_voxel=3)
    parsed = da.PipelineStages.parse(["--downsample", "2x2", "--normals", "--transform", RIGID, "--roi", WIDE_ROI,
                                      "--voxel", "10", "--min-points", "3"])
    assert by_keyword == parsed
    assert da.PipelineStages(downsample=da.Downsampling.by3x3) == da.PipelineStages.parse(["--downsample=3x3"])
    assert by_keyword != da.PipelineStages()
    assert da.PipelineStages.parse(by_keyword.to_arguments()) == by_keyword
    windowed = da.PipelineStages(downsample="2x2", normals=True, normal_window=5)
    assert windowed.normal_window == 5
    assert windowed == da.PipelineStages.parse(["--downsample", "2x2", "--normals", "--normal-window", "5"])
    assert windowed != da.PipelineStages(downsample="2x2", normals=True)


def test_camera_filter_options_and_keywords():
    s = da.PipelineStages.parse(["--snr-threshold", "3", "--remove-outliers=25", "--smooth", "1.5", "--smooth-radius",
                                 "4", "--fill-holes", "6", "--max-depth-step", "12"])
    assert s.snr_threshold == 3 and s.outlier_distance == 25 and s.smoothing_sigma == 1.5
    assert s.smoothing_radius == 4 and s.max_hole_size == 6 and s.max_depth_step == 12
    assert s.stage_count() == 4 and s.needs_organized_input() and not s.unorganizes()
    assert s == da.PipelineStages(snr_threshold=3, outlier_distance=25, smoothing_sigma=1.5, smoothing_radius=4,
                                  max_hole_size=6, max_depth_step=12)
    assert da.PipelineStages.parse(s.to_arguments()) == s
    assert pickle.loads(pickle.dumps(s)) == s
    empty = da.PipelineStages()
    assert empty.snr_threshold is None and empty.max_hole_size is None and empty.max_depth_step == 10
    with pytest.raises(ValueError, match="--smooth-radius needs --smooth"):
        da.PipelineStages(smoothing_radius=3)
    with pytest.raises(ValueError, match="--max-depth-step needs --smooth or --fill-holes"):
        da.PipelineStages(max_depth_step=3)
    with pytest.raises(ValueError, match="--fill-holes"):
        da.PipelineStages(max_hole_size=0)


def test_unorganized_outlier_options_and_keywords():
    s = da.PipelineStages.parse(["--statistical-outliers", "20,2.5", "--radius-outliers=4.5,3"])
    assert s.statistical_outliers == (20, 2.5)
    assert s.radius_outliers == (4.5, 3)
    assert s.unorganizes() and not s.needs_organized_input() and s.stage_count() == 3
    assert s == da.PipelineStages(statistical_outliers=(20, 2.5), radius_outliers=(4.5, 3))
    assert da.PipelineStages.parse(s.to_arguments()) == s
    assert pickle.loads(pickle.dumps(s)) == s
    empty = da.PipelineStages()
    assert empty.statistical_outliers is None and empty.radius_outliers is None
    with pytest.raises(ValueError, match="in 1..32"):
        da.PipelineStages(statistical_outliers=(40, 2.0))
    with pytest.raises(ValueError, match="radius 0 must be a finite distance > 0"):
        da.PipelineStages(radius_outliers=(0.0, 3))
    with pytest.raises(ValueError, match="must be K,RATIO"):
        da.PipelineStages.parse(["--statistical-outliers", "20"])


def test_stages_pickle_and_print_as_their_options():
    s = da.PipelineStages.parse(["--normals", "--transform", RIGID, "--voxel", "2.5"])
    assert pickle.loads(pickle.dumps(s)) == s
    assert repr(s).startswith("PipelineStages.parse(['--normals', '--transform', ")
    assert "'--voxel', '2.5'" in repr(s)


@pytest.mark.parametrize("args, message", [
    (["--downsample", "5x5"], "--downsample '5x5' is not one of 2x2, 3x3, 4x4"),
    (["--transform", "1,0,0,0,0,1,0,0,0,0,1,0,0,0,0"], "expected 16 numbers, got 15"),
    (["--transform", "1,0,0,0,0,1,0,0,0,0,1,0,0,0,1,1"], "0 0 0 1"),
    (["--transform", "no_such_matrix.txt"], "neither a readable file"),
    (["--normals", "--transform", "1,0,0,0,0,0,0,0,0,0,1,0,0,0,0,1"], "singular"),
    (["--roi=0,0,0,1,0,0,2,0,0,0,10"], "collinear"),
    (["--roi=0,0,0,1,0,0,0,1,0,10,0"], "greater than max"),
    (["--voxel", "0"], "--voxel 0 must be a finite size > 0"),
    (["--min-points", "3"], "--min-points needs --voxel"),
    (["--voxel", "5", "--min-points", "0"], "--min-points '0'"),
    (["--voxel"], "--voxel needs a value"),
    (["--normals", "--normals"], "given twice"),
    (["--normal-window", "5"], "--normal-window needs --normals"),
    (["--normals", "--normal-window", "6"], "--normal-window 6 must be odd"),
    (["--fast"], "not a stage option"),
    (["--snr-threshold", "inf"], "--snr-threshold 'inf' is not a finite number"),
    (["--remove-outliers", "-2"], "--remove-outliers -2 must be a finite distance >= 0"),
    (["--smooth", "-1"], "--smooth -1 must be a finite sigma > 0"),
    (["--fill-holes", "2000"], "--fill-holes '2000' must be an integer in 1..1024"),
])
def test_malformed_options_raise_value_error_with_the_commands_message(args, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        da.PipelineStages.parse(args)


def test_keywords_are_checked_as_the_options_are():
    with pytest.raises(ValueError, match="--min-points needs --voxel"):
        da.PipelineStages(min_points_per_voxel=2)
    with pytest.raises(ValueError, match="--voxel"):
        da.PipelineStages(voxel_size=-1.0)
    with pytest.raises(ValueError, match="0 0 0 1"):
        da.PipelineStages(transform=np.ones((4, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="not one of"):
        da.PipelineStages(downsample="2x3")
    with pytest.raises(TypeError):
        da.PipelineStages(downsample=2)


# ------------------------------------------------------------------ running --

OPTION_SETS = [
    [],
    ["--downsample", "2x2", "--normals"],
    ["--normals", "--transform", RIGID],
    [f"--roi={WIDE_ROI}", "--unorganize", "--normals"],
    ["--normals", "--voxel", "20", "--min-points", "2"],
    ["--downsample", "2x2", "--normals", "--transform", RIGID, f"--roi={WIDE_ROI}", "--voxel", "10"],
    ["--transform", "1e37,0,0,0,0,1,0,0,0,0,1,0,0,0,0,1"],
    ["--snr-threshold", "5", "--remove-outliers", "20", "--smooth", "1.2", "--fill-holes", "4", "--normals"],
    ["--normals", "--statistical-outliers", "16,1", "--radius-outliers", "30,4", "--voxel", "15"],
    ["--downsample", "2x2", "--normals", "--normal-window", "5"],
]


def test_process_ply_file_reports_every_stage(device, tmp_path):
    write_scene(tmp_path / "scene.ply")
    stages = da.PipelineStages.parse(OPTION_SETS[5])
    result = da.process_ply_file(tmp_path / "scene.ply", str(tmp_path / "out.ply"), stages, device=device)
    names = [row.stage for row in result.stages]
    assert names == ["read PLY", "upload", "downsample 2x2", "normals", "transform", "roi", "unorganize",
                     "voxel 10 mm, min 1", "download", "write PLY"]
    assert result.stages[0].result == "40 x 56"
    assert result.stages[2].result == "20 x 28"
    assert math.isnan(result.stages[0].device_ms) and result.stages[2].device_ms >= 0
    assert not result.is_organized and result.height == 0
    assert result.size == result.valid_count > 0
    assert result.stages[-2].result == f"{result.size} points"
    assert result.non_finite_points == 0
    assert (tmp_path / "out.ply").read_bytes().startswith(b"ply\n")


def test_process_ply_file_refuses_what_the_command_refuses(device, tmp_path):
    write_scene(tmp_path / "scene.ply")
    with pytest.raises(ValueError, match="no valid point is left after --roi"):
        da.process_ply_file(tmp_path / "scene.ply", tmp_path / "none.ply",
                            da.PipelineStages.parse(["--roi=-10,-10,0,10,-10,0,-10,10,0,0,1", "--unorganize"]),
                            device=device)
    with pytest.raises(ValueError, match="does not exist"):
        da.process_ply_file(tmp_path / "scene.ply", tmp_path / "no_dir" / "x.ply", da.PipelineStages(), device=device)
    with pytest.raises(ValueError, match="format 'text'"):
        da.process_ply_file(tmp_path / "scene.ply", tmp_path / "x.ply", da.PipelineStages(), device=device,
                            format="text")
    assert not (tmp_path / "none.ply").exists() and not (tmp_path / "x.ply").exists()


@pytest.mark.parametrize("fmt", ["binary", "ascii"])
def test_process_ply_file_writes_pcd_and_xyz_by_extension(device, tmp_path, fmt):
    """A .pcd or .xyz output used to get PLY bytes, which read_point_cloud refused."""
    write_scene(tmp_path / "scene.ply")
    stages = da.PipelineStages.parse(["--downsample", "2x2"])
    for name in ("out.ply", "out.pcd", "out.xyz"):
        result = da.process_ply_file(tmp_path / "scene.ply", tmp_path / name, stages, device=device, format=fmt)
        assert result.stages[-1].stage == "write " + name[-3:].upper()
    assert (tmp_path / "out.pcd").read_bytes().startswith(b"# .PCD v0.7")
    want = da.read_point_cloud(tmp_path / "out.ply", device=device).device_points_xyz().to_numpy()
    for name, grid in (("out.pcd", {}), ("out.xyz", {"height": 20, "width": 28})):
        back = da.read_point_cloud(tmp_path / name, device=device, **grid)
        assert (back.height(), back.width()) == (20, 28)
        got = back.device_points_xyz().to_numpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(got[~np.isnan(got)], want[~np.isnan(want)])
    # Neither has a big-endian form: refused, not written as something else.
    for name in ("big.pcd", "big.xyz"):
        with pytest.raises(ValueError, match="format binary_big_endian: .* which has no big-endian form"):
            da.process_ply_file(tmp_path / "scene.ply", tmp_path / name, stages, device=device,
                                format="binary_big_endian")
        assert not (tmp_path / name).exists()


@pytest.mark.parametrize("fmt", ["binary", "ascii"])
def test_process_ply_file_writes_the_bytes_of_the_command(device, tmp_path, fmt):
    cli = command_path()
    if cli is None:
        pytest.skip("the devicearray command is not built next to this package (set DEVICEARRAY_CLI)")
    write_scene(tmp_path / "scene.ply")
    backend = "cuda" if device.backend() == da.ComputeBackend.cuda else "opencl"
    for n, options in enumerate(OPTION_SETS):
        expected = tmp_path / f"cli{n}.ply"
        run = subprocess.run([str(cli), "process", str(tmp_path / "scene.ply"), *options, "--device",
                              f"{backend}:{device.ordinal()}", "--format", fmt, "-o", str(expected)],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        got = tmp_path / f"python{n}.ply"
        result = da.process_ply_file(tmp_path / "scene.ply", got, da.PipelineStages.parse(options), device=device,
                                     format=fmt)
        assert got.read_bytes() == expected.read_bytes(), options
        # The stage table is the command's (the times aside).
        printed = [line.split()[0] for line in run.stdout.splitlines()[2:2 + len(result.stages)]]
        assert printed == [row.stage.split()[0] for row in result.stages], run.stdout


# ------------------------------------------------------------------ colours --

def write_every_code(path):
    """A 16 x 16 organized binary PLY whose colours hold each of the 256 sRGB codes in
    every channel; returns the (256, 4) codes."""
    i = np.arange(256)
    codes = np.stack([i, 255 - i, (i * 7) % 256, (i * 3 + 1) % 256], axis=-1).astype(np.uint8)
    vertex = np.empty(256, dtype=[("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("red", "u1"), ("green", "u1"),
                                  ("blue", "u1"), ("alpha", "u1")])
    vertex["x"], vertex["y"], vertex["z"] = i % 16, i // 16, 500
    vertex["red"], vertex["green"], vertex["blue"], vertex["alpha"] = codes.T
    header = ("ply\nformat binary_little_endian 1.0\nobj_info height 16\nobj_info width 16\n"
              "element vertex 256\nproperty float x\nproperty float y\nproperty float z\n"
              "property uchar red\nproperty uchar green\nproperty uchar blue\nproperty uchar alpha\nend_header\n")
    pathlib.Path(path).write_bytes(header.encode() + vertex.tobytes())
    return codes


def test_process_without_stages_keeps_every_srgb_code(device, tmp_path):
    codes = write_every_code(tmp_path / "codes.ply")
    da.process_ply_file(tmp_path / "codes.ply", tmp_path / "out.ply", da.PipelineStages(), device=device)
    back = da.read_point_cloud(tmp_path / "out.ply", device=device)
    assert back.color_space() == "srgb"
    np.testing.assert_array_equal(back.image_device_array(da.Format.ColorRGBA_SRGB).to_numpy().reshape(256, 4), codes)
    # Written again from Python: the same codes.
    da.write_point_cloud(tmp_path / "again.ply", back)
    again = da.read_point_cloud(tmp_path / "again.ply", device=device)
    np.testing.assert_array_equal(again.image_device_array(da.Format.ColorRGBA_SRGB).to_numpy().reshape(256, 4), codes)


def test_colour_means_linear_and_srgb(device):
    """A linear cloud keeps its integer block means; an sRGB cloud averages in linear light."""
    F = da.Format
    xyz = np.zeros((2, 2, 3), np.float32)
    xyz[..., 2] = 500
    rgba = np.array([[[0, 0, 0, 255], [255, 255, 255, 255]], [[0, 0, 0, 255], [255, 255, 255, 255]]], np.uint8)
    points = da.from_numpy(xyz, format=F.PointXYZ, device=device)
    linear = da.PointCloud(points, da.from_numpy(rgba, format=F.ColorRGBA, device=device))
    srgb = da.PointCloud(points, da.from_numpy(rgba, format=F.ColorRGBA_SRGB, device=device))
    assert (linear.color_space(), srgb.color_space()) == ("linear", "srgb")
    mean_linear = linear.downsampled(da.Downsampling.by2x2).image_device_array(F.ColorRGBA).to_numpy()
    mean_srgb = srgb.downsampled(da.Downsampling.by2x2).image_device_array(F.ColorRGBA_SRGB).to_numpy()
    assert mean_linear.reshape(4).tolist() == [128, 128, 128, 255]
    assert mean_srgb.reshape(4).tolist() == [188, 188, 188, 255]  # half the light
