"""PointCloud, UnorganizedPointCloud, Frame2D, RegionOfInterestBox and Downsampling
on every device, each result checked against a numpy reference written here from
the documented semantics (never from the library's output).

Tolerances follow tests/point_cloud_test.cpp: XYZ 1e-5 relative + 1e-4 mm absolute
(the device accumulates in float, the references in double), normals 1e-4 per
component, integer colours exact, sRGB encoding +-1 code, SNR 1e-5 relative."""

import numpy as np
import pytest

import devicearray as da
from conftest import reference

F = da.Format

COLOR_FORMATS = [F.ColorRGBA, F.ColorBGRA, F.ColorRGBA_SRGB, F.ColorBGRA_SRGB, F.ColorRGBAf, F.ColorRGB, F.ColorBGR,
                 F.ColorRGB_SRGB, F.ColorBGR_SRGB]
DOWNSAMPLINGS = [(da.Downsampling.by2x2, 2), (da.Downsampling.by3x3, 3), (da.Downsampling.by4x4, 4)]


# ------------------------------------------------------------------ helpers --

class On:
    """Runs a call blocking (no stream) or enqueued on a fresh da.Stream."""

    def __init__(self, device, use_stream):
        self.stream = da.Stream(device) if use_stream else None

    @property
    def kw(self):
        return {"stream": self.stream} if self.stream is not None else {}

    def sync(self):
        if self.stream is not None:
            self.stream.wait_for_completion()


@pytest.fixture(params=[False, True], ids=["blocking", "stream"])
def on(request, device):
    return On(device, request.param)


def make_cloud(h, w, seed, holes=0.15):
    """Organized host data: XYZ in mm (z in [300, 1500], NaN holes), linear RGBA, SNR."""
    rng = np.random.default_rng(seed + 1000)
    xyz = reference((h, w, 3), np.float32, seed) * np.float32(0.5)
    xyz[..., 2] = np.abs(xyz[..., 2]) * np.float32(2.4) + np.float32(300)
    xyz[rng.random((h, w)) < holes] = np.nan
    rgba = reference((h, w, 4), np.uint8, seed + 1)
    snr = rng.uniform(0.5, 10.0, (h, w)).astype(np.float32)
    return xyz, rgba, snr


def upload(device, xyz, rgba=None, snr=None):
    x = da.from_numpy(xyz, format=F.PointXYZ, device=device)
    c = None if rgba is None else da.from_numpy(rgba, format=F.ColorRGBA, device=device)
    s = None if snr is None else da.from_numpy(snr, format=F.SNR, device=device)
    return da.PointCloud(x, c, s)


def upload_unorganized(device, xyz, rgba=None, snr=None):
    x = da.from_numpy(xyz, format=F.PointXYZ, device=device)
    c = None if rgba is None else da.from_numpy(rgba, format=F.ColorRGBA, device=device)
    s = None if snr is None else da.from_numpy(snr, format=F.SNR, device=device)
    return da.UnorganizedPointCloud(x, c, s)


def valid_of(xyz):
    return np.isfinite(xyz).all(axis=-1)


def assert_points_close(got, want, rtol=1e-5, atol=1e-4):
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape
    missing = ~valid_of(want)
    np.testing.assert_array_equal(~valid_of(got), missing)
    assert np.isnan(got[missing]).all()
    np.testing.assert_allclose(got[~missing], want[~missing], rtol=rtol, atol=atol)


def assert_snr_close(got, want):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-5, atol=1e-6)


def srgb_encode(linear_u8):
    """IEC 61966-2-1 encoding of linear 8-bit codes, as (unrounded) 8-bit codes."""
    v = linear_u8.astype(np.float64) / 255.0
    s = np.where(v <= 0.0031308, 12.92 * v, 1.055 * np.power(v, 1 / 2.4) - 0.055)
    return s * 255.0


def color_ref(rgba, fmt):
    """Linear RGBA u8 -> `fmt`: (expected array, tolerance)."""
    name = fmt.name
    if name == "ColorRGBAf":
        return rgba.astype(np.float64) / 255.0, 1e-6
    rgb = rgba[..., :3].astype(np.float64)
    srgb = name.endswith("_SRGB")
    if srgb:
        rgb = srgb_encode(rgba[..., :3])
    order = [2, 1, 0] if name.startswith("ColorBGR") else [0, 1, 2]
    channels = [rgb[..., i] for i in order]
    if "RGBA" in name or "BGRA" in name:
        channels.append(rgba[..., 3].astype(np.float64))
    return np.stack(channels, axis=-1), (1.0 if srgb else 0.0)


def assert_colors(got_arr, rgba, fmt):
    assert got_arr.format == fmt
    got = got_arr.to_numpy()
    want, tol = color_ref(rgba, fmt)
    assert got.dtype == np.dtype(da.format_dtype(fmt))
    assert got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol + 1e-9)


def block_sums(a, k, ho, wo):
    """(H, W, ...) -> (ho, wo, k*k, ...) blocks."""
    rest = a.shape[2:]
    b = a[:ho * k, :wo * k].reshape((ho, k, wo, k) + rest)
    return np.moveaxis(b, 2, 1).reshape((ho, wo, k * k) + rest)


def downsample_ref(xyz, rgba, snr, k):
    """Block downsampling: SNR^2-weighted mean of the valid points of each k x k block (plain
    mean when every weight is 0 or there is no SNR), NaN where none; colour: mean of
    the block, rounded half up; SNR: sqrt of the sum of the valid SNR^2."""
    h, w = xyz.shape[:2]
    ho, wo = h // k, w // k
    p = block_sums(xyz.astype(np.float64), k, ho, wo)
    valid = valid_of(p)
    p0 = np.where(valid[..., None], p, 0.0)
    if snr is None:
        wt = np.ones(valid.shape)
    else:
        s = block_sums(snr.astype(np.float64), k, ho, wo)
        wt = np.where(np.isfinite(s), s * s, 0.0)
    wt = np.where(valid, wt, 0.0)
    count = valid.sum(-1)
    wsum = wt.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        weighted = (wt[..., None] * p0).sum(-2) / wsum[..., None]
        plain = p0.sum(-2) / count[..., None]
    out = np.where((wsum > 0)[..., None], weighted, plain)
    out[count == 0] = np.nan
    out_rgba = None if rgba is None else np.floor(
        block_sums(rgba.astype(np.float64), k, ho, wo).sum(-2) / (k * k) + 0.5).astype(np.uint8)
    out_snr = None if snr is None else np.sqrt(wsum)
    return out, out_rgba, out_snr


def transform_ref(xyz, m):
    m = np.asarray(m, np.float64).reshape(4, 4)
    p = xyz.astype(np.float64)
    out = p @ m[:3, :3].T + m[:3, 3]
    out[~valid_of(xyz)] = np.nan
    return out


def rotation(axis, angle, t=(0.0, 0.0, 0.0)):
    c, s = np.cos(angle), np.sin(angle)
    i, j = [(1, 2), (2, 0), (0, 1)][axis]
    m = np.eye(4)
    m[i, i] = m[j, j] = c
    m[i, j], m[j, i] = -s, s
    m[:3, 3] = t
    return m.astype(np.float32)


def normals_ref(xyz, cam=(0.0, 0.0, 0.0)):
    """Normals: cross product of the horizontal and vertical central differences of
    neighbouring valid points (one-sided at borders / holes), n . (p - camera) < 0."""
    p = xyz.astype(np.float64)
    valid = valid_of(xyz)

    def diff(axis):
        before = np.full_like(p, np.nan)
        after = np.full_like(p, np.nan)
        vb = np.zeros(valid.shape, bool)
        va = np.zeros(valid.shape, bool)
        if axis == 1:
            before[:, 1:], vb[:, 1:] = p[:, :-1], valid[:, :-1]
            after[:, :-1], va[:, :-1] = p[:, 1:], valid[:, 1:]
        else:
            before[1:], vb[1:] = p[:-1], valid[:-1]
            after[:-1], va[:-1] = p[1:], valid[1:]
        frm = np.where(vb[..., None], before, p)
        to = np.where(va[..., None], after, p)
        return to - frm, vb | va

    dh, okh = diff(1)
    dv, okv = diff(0)
    n = np.cross(dh, dv)
    length = np.linalg.norm(n, axis=-1)
    ok = valid & okh & okv & (length > 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        dot = (n * (p - np.asarray(cam))).sum(-1)
        out = n * (np.where(dot > 0, -1.0, 1.0) / length)[..., None]
    out[~ok] = np.nan
    return out


def roi_ref(xyz, box):
    """Inside flags and the distance to the nearest face, in double, with the base
    normal n = normalize((A - O) x (B - O)) (include/devicearray/point_cloud.hpp)."""
    o, a, b = (np.asarray(v, np.float64) for v in (box.origin, box.point_a, box.point_b))
    u, v = a - o, b - o
    n = np.cross(u, v)
    lu, lv = np.linalg.norm(u), np.linalg.norm(v)
    d = xyz.astype(np.float64) - o
    pu, pv, pn = d @ u / lu, d @ v / lv, d @ n / np.linalg.norm(n)
    margins = np.stack([pu, lu - pu, pv, lv - pv, pn - box.min_extent, box.max_extent - pn], -1)
    inside = (margins >= 0).all(-1) & valid_of(xyz)
    return inside, np.abs(margins).min(-1)


def voxel_ref(xyz, rgba, snr, size, min_points):
    """One point per occupied voxel of the grid anchored at the min corner of the valid
    points, in ascending (x, y, z) voxel order: SNR^2-weighted mean (plain mean without
    SNR or when all weights are 0), mean colour (rounded half up), sqrt(sum SNR^2);
    voxels with fewer than min_points points dropped; NaN points ignored."""
    valid = valid_of(xyz)
    pts = xyz[valid]
    idx = np.floor((pts - pts.min(0)) / np.float32(size)).astype(np.int64)
    groups = {}
    for i, key in enumerate(map(tuple, idx)):
        groups.setdefault(key, []).append(i)
    cols = None if rgba is None else rgba[valid].astype(np.float64)
    snrs = None if snr is None else snr[valid].astype(np.float64)
    out_xyz, out_rgba, out_snr = [], [], []
    for key in sorted(groups):
        members = groups[key]
        if len(members) < min_points:
            continue
        p = pts[members].astype(np.float64)
        wt = np.ones(len(members)) if snrs is None else np.where(np.isfinite(snrs[members]), snrs[members] ** 2, 0.0)
        out_xyz.append((wt[:, None] * p).sum(0) / wt.sum() if wt.sum() > 0 else p.mean(0))
        if cols is not None:
            out_rgba.append(np.floor(cols[members].sum(0) / len(members) + 0.5))
        if snrs is not None:
            out_snr.append(np.sqrt(wt.sum()))
    return np.array(out_xyz).reshape(-1, 3), np.array(out_rgba).reshape(-1, 4), np.array(out_snr)


# -------------------------------------------------- construction, accessors --

def test_construction_sizes_and_attributes(device):
    xyz, rgba, snr = make_cloud(12, 16, 1)
    full = upload(device, xyz, rgba, snr)
    assert (full.height(), full.width(), full.size()) == (12, 16, 192)
    assert full.has_colors() and full.has_snrs() and not full.is_empty()
    assert full.device() == device
    plain = upload(device, xyz)
    assert (plain.height(), plain.width(), plain.size()) == (12, 16, 192)
    assert not plain.has_colors() and not plain.has_snrs()
    only_snr = upload(device, xyz, snr=snr)
    assert only_snr.has_snrs() and not only_snr.has_colors()
    assert da.PointCloud().is_empty() and da.PointCloud().size() == 0
    np.testing.assert_array_equal(full.transformation_matrix(), np.eye(4, dtype=np.float32))
    with pytest.raises(RuntimeError):
        plain.device_snrs()
    with pytest.raises(RuntimeError):
        plain.image_device_array(F.ColorRGBA)


def test_construction_is_zero_copy(device):
    xyz, _, _ = make_cloud(12, 16, 2)
    arr = da.from_numpy(xyz, format=F.PointXYZ, device=device)
    cloud = da.PointCloud(arr)
    cloud.transform([1, 0, 0, 10, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1])
    want = xyz.astype(np.float64)
    want[..., 0] += 10
    assert_points_close(arr.to_numpy(), want)  # in place on the user's array


def test_point_accessors(device, on):
    xyz, rgba, snr = make_cloud(24, 32, 3)
    cloud = upload(device, xyz, rgba, snr)
    pxyz = cloud.device_points_xyz(**on.kw)
    pxyzw = cloud.device_points_xyzw(**on.kw)
    pz = cloud.device_points_z(**on.kw)
    psnr = cloud.device_snrs(**on.kw)
    on.sync()
    assert pxyz.format == F.PointXYZ and pxyz.shape == (24, 32, 3)
    np.testing.assert_array_equal(pxyz.to_numpy(), xyz)  # NaN in the same places
    assert pxyzw.format == F.PointXYZW and pxyzw.shape == (24, 32, 4)
    w4 = pxyzw.to_numpy()
    np.testing.assert_array_equal(w4[..., :3], xyz)
    valid = valid_of(xyz)
    assert (~valid).any() and (w4[valid, 3] == 1.0).all()
    assert pz.format == F.PointZ and pz.shape == (24, 32)
    np.testing.assert_array_equal(pz.to_numpy(), xyz[..., 2])
    assert psnr.format == F.SNR and psnr.shape == (24, 32)
    np.testing.assert_array_equal(psnr.to_numpy(), snr)
    # A copy: writing it leaves the cloud alone.
    pxyz.to_gpu_mat_nd().upload(np.zeros((24, 32, 3), np.float32))
    np.testing.assert_array_equal(cloud.device_points_xyz().to_numpy(), xyz)


@pytest.mark.parametrize("fmt", COLOR_FORMATS, ids=lambda f: f.name)
def test_point_cloud_image_every_colour_format(device, fmt):
    xyz, rgba, snr = make_cloud(12, 16, 4)
    rgba[0, :16, :3] = np.arange(0, 256, 16, dtype=np.uint8)[:, None]  # the dark end of the sRGB curve too
    cloud = upload(device, xyz, rgba, snr)
    assert_colors(cloud.image_device_array(fmt), rgba, fmt)


def test_point_cloud_image_on_stream(device):
    xyz, rgba, _ = make_cloud(12, 16, 5)
    cloud = upload(device, xyz, rgba)
    s = da.Stream(device)
    out = cloud.image_device_array(F.ColorBGRA_SRGB, stream=s)
    s.wait_for_completion()
    assert_colors(out, rgba, F.ColorBGRA_SRGB)


# --------------------------------------------------------------- downsample --

@pytest.mark.parametrize("attrs", [True, False], ids=["rgba_snr", "xyz_only"])
@pytest.mark.parametrize("d,k", DOWNSAMPLINGS, ids=lambda v: getattr(v, "name", None))
def test_downsampled_matches_reference(device, on, d, k, attrs):
    h, w = 26, 35  # divisible by none of 2, 3, 4
    xyz, rgba, snr = make_cloud(h, w, 10 + k, holes=0.3)
    snr[::5, ::7] = 0  # zero weights
    xyz[:k, :k] = np.nan  # one block without a valid point
    if not attrs:
        rgba = snr = None
    want_xyz, want_rgba, want_snr = downsample_ref(xyz, rgba, snr, k)
    cloud = upload(device, xyz, rgba, snr)
    out = cloud.downsampled(d, **on.kw)
    on.sync()
    assert (out.height(), out.width()) == (h // k, w // k)
    assert out.has_colors() == attrs and out.has_snrs() == attrs
    got = out.device_points_xyz().to_numpy()
    assert np.isnan(got[0, 0]).all()
    assert_points_close(got, want_xyz)
    if attrs:
        np.testing.assert_array_equal(out.image_device_array(F.ColorRGBA).to_numpy(), want_rgba)
        assert_snr_close(out.device_snrs().to_numpy(), want_snr)
    # The source is unchanged; downsample() replaces it in place.
    assert (cloud.height(), cloud.width()) == (h, w)
    np.testing.assert_array_equal(cloud.device_points_xyz().to_numpy(), xyz)
    cloud.downsample(d, **on.kw)
    on.sync()
    assert (cloud.height(), cloud.width(), cloud.size()) == (h // k, w // k, (h // k) * (w // k))
    assert_points_close(cloud.device_points_xyz().to_numpy(), want_xyz)
    if attrs:
        assert_snr_close(cloud.device_snrs().to_numpy(), want_snr)


def test_downsample_hand_worked_block(device):
    # Weights 1 and 4 (SNR 1, 2), a hole, a zero-SNR point: x = (1*0 + 4*10 + 0*100) / 5.
    xyz = np.array([[[0, 0, 1], [10, 0, 1]], [[np.nan] * 3, [100, 100, 100]]], np.float32)
    snr = np.array([[1, 2], [5, 0]], np.float32)
    out = upload(device, xyz, snr=snr).downsampled(da.Downsampling.by2x2)
    np.testing.assert_allclose(out.device_points_xyz().to_numpy()[0, 0], [8, 0, 1], rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(out.device_snrs().to_numpy()[0, 0], np.sqrt(5), rtol=1e-6)


def test_downsample_too_small_is_rejected_and_leaves_the_cloud(device):
    xyz, _, _ = make_cloud(3, 5, 12, holes=0)
    cloud = upload(device, xyz)
    with pytest.raises(ValueError):
        cloud.downsample(da.Downsampling.by4x4)
    assert (cloud.height(), cloud.width()) == (3, 5)
    with pytest.raises(ValueError):
        cloud.downsampled(da.Downsampling.by4x4)


# ------------------------------------------------------------------ normals --

def plane_cloud(h, w, holes=True):
    r, c = np.mgrid[0:h, 0:w]
    x = (c - w // 2) * 4.0
    y = (r - h // 2) * 4.0
    xyz = np.stack([x, y, 1000 + 0.5 * x], -1).astype(np.float32)
    if holes:
        xyz[(r * 7 + c * 3) % 11 == 0] = np.nan
    return xyz


def test_normals_of_a_plane_equal_the_plane_normal(device, on):
    xyz = plane_cloud(24, 32)
    xyz[5, 10] = xyz[5, 12] = xyz[4, 11] = xyz[6, 11] = np.nan  # (5, 11) has no neighbour at all
    xyz[10, :] = np.nan
    xyz[9, 20] = xyz[11, 20] = np.nan  # (10, 20) ... and an isolated valid point
    xyz[10, 20] = [0, 0, 1000]
    xyz[10, 19] = xyz[10, 21] = np.nan
    n = upload(device, xyz).device_normals_xyz(**on.kw)
    on.sync()
    assert n.format == F.NormalXYZ and n.shape == (24, 32, 3)
    got = n.to_numpy()
    want = normals_ref(xyz)
    computable = valid_of(want)
    np.testing.assert_array_equal(valid_of(got), computable)
    assert not computable[5, 11] and not computable[10, 20]
    assert computable.sum() > 500
    plane_normal = np.array([0.5, 0.0, -1.0]) / np.sqrt(1.25)  # towards the camera at the origin
    np.testing.assert_allclose(got[computable], np.broadcast_to(plane_normal, got[computable].shape), atol=1e-4)


def test_normals_of_a_curved_surface_match_reference(device):
    h, w = 32, 48
    r, c = np.mgrid[0:h, 0:w]
    x, y = (c - w / 2) * 5.0, (r - h / 2) * 5.0
    xyz = np.stack([x, y, 900 + 40 * np.sin(x / 50) + 25 * np.cos(y / 35)], -1).astype(np.float32)
    xyz[np.random.default_rng(7).random((h, w)) < 0.15] = np.nan
    got = upload(device, xyz).device_normals_xyz().to_numpy()
    want = normals_ref(xyz)
    np.testing.assert_array_equal(valid_of(got), valid_of(want))
    ok = valid_of(want)
    np.testing.assert_allclose(got[ok], want[ok], atol=1e-4)
    np.testing.assert_allclose(np.linalg.norm(got[ok].astype(np.float64), axis=-1), 1.0, atol=1e-5)
    assert ((got[ok].astype(np.float64) * xyz[ok]).sum(-1) < 0).all()  # n . p < 0
    # A transformed cloud's normals are the rotated normals (the camera moves too).
    m = rotation(1, 0.7, (50, -20, 30))
    moved = upload(device, xyz).transformed(m).device_normals_xyz().to_numpy()
    np.testing.assert_allclose(moved[ok], want[ok] @ m[:3, :3].astype(np.float64).T, atol=1e-4)


def test_normals_of_a_single_row_are_nan(device):
    xyz = plane_cloud(1, 16, holes=False)
    assert np.isnan(upload(device, xyz).device_normals_xyz().to_numpy()).all()


# ---------------------------------------------------------------- transform --

MATRIX_FORMS = {
    "numpy4x4": lambda m: m,
    "flat16": lambda m: [float(v) for v in m.reshape(-1)],
    "nested_float64": lambda m: m.astype(np.float64).tolist(),
}


# Matrix forms read without numpy (float32 buffers, lists and tuples of exact numbers)
# and forms left to numpy's conversion (other dtypes, strided views, numpy scalars,
# ints a float cannot hold): each must give the matrix numpy makes of it.
MATRIX_FAST_AND_SLOW_FORMS = {
    "tuple_rows": lambda m: tuple(tuple(float(v) for v in row) for row in m),
    "flat_tuple": lambda m: tuple(float(v) for v in m.reshape(-1)),
    "flat_float32": lambda m: m.reshape(-1).copy(),
    "int_rows": lambda m: [[int(round(float(v))) for v in row] for row in m],
    "ints_past_float": lambda m: [[1, 0, 0, 2**24 + 1], [0, 1, 0, -(2**25) - 3], [0, 0, 1, 7], [0, 0, 0, 1]],
    "column_major_float32": lambda m: np.asfortranarray(m),
    "float64": lambda m: m.astype(np.float64),
    "numpy_scalars": lambda m: [list(row) for row in m],
}


@pytest.mark.parametrize("form", list(MATRIX_FAST_AND_SLOW_FORMS), ids=list(MATRIX_FAST_AND_SLOW_FORMS))
def test_every_matrix_form_gives_the_matrix_numpy_makes_of_it(device, form):
    matrix = MATRIX_FAST_AND_SLOW_FORMS[form](rotation(1, 0.7, (5.25, -7.5, 100.125)))
    want = np.ascontiguousarray(matrix, dtype=np.float32).reshape(4, 4)
    cloud = upload(device, make_cloud(4, 5, 3)[0])
    np.testing.assert_array_equal(cloud.transformed(matrix).transformation_matrix(), want)


@pytest.mark.parametrize("form", list(MATRIX_FORMS), ids=list(MATRIX_FORMS))
def test_transform_applies_to_valid_points_and_accumulates(device, on, form):
    xyz, rgba, snr = make_cloud(24, 32, 20)
    r = rotation(2, 0.3, (5, -7, 100))
    s = np.array([[2, 0, 0, 0], [0, 1, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1]], np.float32)
    cloud = upload(device, xyz, rgba, snr)
    cloud.transform(MATRIX_FORMS[form](r), **on.kw)
    cloud.transform(MATRIX_FORMS[form](s), **on.kw)
    on.sync()
    assert_points_close(cloud.device_points_xyz().to_numpy(), transform_ref(transform_ref(xyz, r), s))
    total = cloud.transformation_matrix()
    assert total.dtype == np.float32 and total.shape == (4, 4)
    np.testing.assert_allclose(total, s.astype(np.float64) @ r.astype(np.float64), atol=1e-6)
    np.testing.assert_array_equal(cloud.device_snrs().to_numpy(), snr)  # attributes untouched
    # transformed(): a new cloud, the source unchanged.
    src = upload(device, xyz, rgba, snr)
    out = src.transformed(MATRIX_FORMS[form](r), **on.kw)
    on.sync()
    assert_points_close(out.device_points_xyz().to_numpy(), transform_ref(xyz, r))
    np.testing.assert_allclose(out.transformation_matrix(), r, atol=1e-7)
    np.testing.assert_array_equal(src.device_points_xyz().to_numpy(), xyz)
    np.testing.assert_array_equal(src.transformation_matrix(), np.eye(4, dtype=np.float32))
    np.testing.assert_array_equal(out.image_device_array(F.ColorRGBA).to_numpy(), rgba)


@pytest.mark.parametrize("bad", [np.eye(3), list(range(15)), np.eye(4)[:3], np.zeros(17)],
                         ids=["3x3", "15values", "3x4", "17values"])
def test_transform_with_a_wrong_shape_is_a_value_error(device, bad):
    xyz, _, _ = make_cloud(4, 5, 21)
    cloud = upload(device, xyz)
    for call in (cloud.transform, cloud.transformed):
        with pytest.raises(ValueError):
            call(bad)
    u = cloud.to_unorganized_point_cloud()
    for call in (u.transform, u.transformed):
        with pytest.raises(ValueError):
            call(bad)
    np.testing.assert_array_equal(cloud.transformation_matrix(), np.eye(4, dtype=np.float32))
    np.testing.assert_array_equal(cloud.device_points_xyz().to_numpy(), xyz)


# --------------------------------------------------------------------- mask --

def random_mask(h, w, seed):
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 256, (h, w)).astype(np.uint8)
    m[rng.random((h, w)) < 0.35] = 0
    return m


def masked_ref(xyz, keep):
    out = xyz.copy()
    out[keep == 0] = np.nan
    return out


def test_mask_with_a_device_mask(device, on):
    xyz, rgba, snr = make_cloud(24, 32, 30)
    m = random_mask(24, 32, 31)
    gpu_mask = da.from_numpy(m, device=device)
    assert isinstance(gpu_mask, da.GpuMatND)
    want = masked_ref(xyz, m)
    src = upload(device, xyz, rgba, snr)
    copy = src.masked(gpu_mask, **on.kw)
    on.sync()
    assert_points_close(copy.device_points_xyz().to_numpy(), want)
    np.testing.assert_array_equal(src.device_points_xyz().to_numpy(), xyz)  # source untouched
    src.mask(gpu_mask, **on.kw)
    on.sync()
    assert_points_close(src.device_points_xyz().to_numpy(), want)
    np.testing.assert_array_equal(src.image_device_array(F.ColorRGBA).to_numpy(), rgba)


@pytest.mark.parametrize("dtype", [np.uint8, np.bool_], ids=["uint8", "bool"])
def test_mask_with_a_host_mask(device, dtype):
    xyz, rgba, snr = make_cloud(24, 32, 32)
    m = random_mask(24, 32, 33)
    host = m.astype(dtype) if dtype is np.bool_ else m
    want = masked_ref(xyz, m)
    src = upload(device, xyz, rgba, snr)
    assert_points_close(src.masked(host).device_points_xyz().to_numpy(), want)
    np.testing.assert_array_equal(src.device_points_xyz().to_numpy(), xyz)
    src.mask(host)
    assert_points_close(src.device_points_xyz().to_numpy(), want)
    # A non-contiguous host mask is read by position.
    strided = np.zeros((24, 64), dtype)
    strided[:, ::2] = host
    other = upload(device, xyz)
    other.mask(strided[:, ::2])
    assert_points_close(other.device_points_xyz().to_numpy(), want)
    # Everything masked away.
    gone = upload(device, xyz)
    gone.mask(np.zeros((24, 32), dtype))
    assert np.isnan(gone.device_points_xyz().to_numpy()).all()
    assert gone.to_unorganized_point_cloud().size() == 0


@pytest.mark.parametrize("bad", [np.ones((24, 32), np.float32), np.ones((24, 32), np.int32), np.ones((32, 24), np.uint8),
                                 np.ones((24, 32, 1), np.uint8), np.ones(24 * 32, np.uint8)],
                         ids=["float32", "int32", "transposed", "3d", "1d"])
def test_bad_host_masks_are_value_errors(device, bad):
    xyz, _, _ = make_cloud(24, 32, 34)
    cloud = upload(device, xyz)
    # The messages name the shape given where the shape is what is wrong.
    transposed = bad.shape == (32, 24)
    with pytest.raises(ValueError, match="the mask is 32x24 but the cloud is 24x32" if transposed else None):
        cloud.mask(bad)
    with pytest.raises(ValueError, match="like the cloud, but is 32x24" if transposed else None):
        cloud.masked(bad)
    np.testing.assert_array_equal(cloud.device_points_xyz().to_numpy(), xyz)


@pytest.mark.parametrize("bad", [((24, 32), np.float32), ((23, 32), np.uint8)], ids=["float32", "wrong_size"])
def test_bad_device_masks_are_value_errors(device, bad):
    shape, dtype = bad
    xyz, _, _ = make_cloud(24, 32, 35)
    cloud = upload(device, xyz)
    gpu_mask = da.from_numpy(np.ones(shape, dtype), device=device)
    with pytest.raises(ValueError):
        cloud.mask(gpu_mask)
    with pytest.raises(ValueError):
        cloud.masked(gpu_mask)


# ------------------------------------------------------- region of interest --

# A tilted box whose base is spanned by non-orthogonal edges; swapping A and B flips
# the base normal, so the second box (extent [0, 350]) keeps the points *below* O.
BOXES = {
    "tilted": ((-200, -100, 500), (250, -50, 600), (-150, 300, 550), -200, 400),
    "swapped_normal": ((-300, -250, 800), (-250, 250, 820), (250, -200, 780), 0, 350),
}


@pytest.mark.parametrize("name", list(BOXES), ids=list(BOXES))
def test_region_of_interest_keeps_points_inside_the_box(device, on, name):
    xyz, rgba, snr = make_cloud(36, 48, 40, holes=0.1)
    box = da.RegionOfInterestBox(*BOXES[name])
    inside, margin = roi_ref(xyz, box)
    clear = margin > 1e-3
    assert inside[clear].sum() > 30 and (~inside[clear] & valid_of(xyz)[clear]).sum() > 30
    want = xyz.copy()
    want[~inside] = np.nan
    src = upload(device, xyz, rgba, snr)
    out = src.masked_by_region_of_interest(box, **on.kw)
    on.sync()
    got = out.device_points_xyz().to_numpy()
    np.testing.assert_array_equal(valid_of(got)[clear], inside[clear])
    np.testing.assert_array_equal(got[inside & clear], xyz[inside & clear])
    np.testing.assert_array_equal(src.device_points_xyz().to_numpy(), xyz)
    src.mask_by_region_of_interest(box, **on.kw)
    on.sync()
    np.testing.assert_array_equal(valid_of(src.device_points_xyz().to_numpy())[clear], inside[clear])


def test_transform_and_region_of_interest_in_one_pass(device, on):
    # One pass gives the points of transform() then mask_by_region_of_interest(), bit
    # for bit, and the same accumulated matrix.
    xyz, rgba, snr = make_cloud(36, 48, 42, holes=0.1)
    c, s = np.cos(0.3), np.sin(0.3)
    pose = np.array([[c, -s, 0, 12.5], [s, c, 0, -7], [0, 0, 1.02, 30], [0, 0, 0, 1]], np.float32)
    box = da.RegionOfInterestBox(*BOXES["tilted"])
    two = upload(device, xyz, rgba, snr)
    two.transform(pose, **on.kw)
    two.mask_by_region_of_interest(box, **on.kw)
    one = upload(device, xyz, rgba, snr)
    one.transform_and_mask_by_region_of_interest(pose, box, **on.kw)
    on.sync()
    got, want = one.device_points_xyz().to_numpy(), two.device_points_xyz().to_numpy()
    assert 30 < valid_of(got).sum() < 0.9 * valid_of(xyz).sum()
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    np.testing.assert_array_equal(one.transformation_matrix(), two.transformation_matrix())
    with pytest.raises(ValueError):
        collinear = da.RegionOfInterestBox((0, 0, 0), (1, 1, 1), (2, 2, 2), 0, 1)
        one.transform_and_mask_by_region_of_interest(pose, collinear)


def test_region_of_interest_box_fields_and_degenerate_boxes(device):
    box = da.RegionOfInterestBox((1, 2, 3), (4, 5, 6), (7, 8, 10), -1.5, 2.5)
    assert list(box.origin) == [1, 2, 3] and list(box.point_a) == [4, 5, 6] and list(box.point_b) == [7, 8, 10]
    assert (box.min_extent, box.max_extent) == (-1.5, 2.5)
    box.origin = (0, 0, 0)
    box.max_extent = 3
    assert list(box.origin) == [0, 0, 0] and box.max_extent == 3
    xyz, _, _ = make_cloud(6, 8, 41)
    cloud = upload(device, xyz)
    for bad in [((0, 0, 0), (0, 0, 0), (0, 1, 0), 0, 1), ((0, 0, 0), (1, 1, 1), (2, 2, 2), 0, 1),
                ((0, 0, 0), (1, 0, 0), (0, 1, 0), 2, 1)]:
        with pytest.raises(ValueError):
            cloud.mask_by_region_of_interest(da.RegionOfInterestBox(*bad))
        with pytest.raises(ValueError):
            cloud.masked_by_region_of_interest(da.RegionOfInterestBox(*bad))
    np.testing.assert_array_equal(cloud.device_points_xyz().to_numpy(), xyz)


# ------------------------------------------------------- to unorganized --

def test_to_unorganized_compacts_in_order(device, on):
    xyz, rgba, snr = make_cloud(36, 48, 50, holes=0.4)
    cloud = upload(device, xyz, rgba, snr)
    t = np.array([[1, 0, 0, 1], [0, 1, 0, 2], [0, 0, 1, 3], [0, 0, 0, 1]], np.float32)
    cloud.transform(t)
    u = cloud.to_unorganized_point_cloud(**on.kw)
    on.sync()
    valid = valid_of(xyz)
    assert u.size() == valid.sum()
    assert u.has_colors() and u.has_snrs()
    np.testing.assert_array_equal(u.transformation_matrix(), cloud.transformation_matrix())
    assert_points_close(u.device_points_xyz().to_numpy(), transform_ref(xyz, t)[valid])
    np.testing.assert_array_equal(u.device_colors(F.ColorRGBA).to_numpy(), rgba[valid])
    np.testing.assert_array_equal(u.device_snrs().to_numpy(), snr[valid])
    plain = upload(device, xyz).to_unorganized_point_cloud()
    assert plain.size() == valid.sum() and not plain.has_colors() and not plain.has_snrs()


def test_stream_results_resolve_their_size_lazily(device):
    xyz, rgba, snr = make_cloud(36, 48, 51, holes=0.4)
    cloud = upload(device, xyz, rgba, snr)
    stream = da.Stream(device)
    u = cloud.to_unorganized_point_cloud(stream=stream)
    voxels = u.voxel_downsampled(20.0, 1, stream=stream)
    assert not u.is_size_known() and not voxels.is_size_known()
    blocking = cloud.to_unorganized_point_cloud()
    assert blocking.is_size_known()
    assert u.size() == valid_of(xyz).sum() and u.is_size_known()
    np.testing.assert_array_equal(u.device_points_xyz().to_numpy(), blocking.device_points_xyz().to_numpy())
    want = blocking.voxel_downsampled(20.0, 1)
    assert voxels.size() == want.size()
    np.testing.assert_array_equal(voxels.device_points_xyz().to_numpy(), want.device_points_xyz().to_numpy())
    # reread(): the same arrays, the count read from the device again (a CUDA graph's launches rewrite it)
    again = voxels.reread()
    assert not again.is_size_known() and voxels.is_size_known()
    assert again.size() == want.size()
    np.testing.assert_array_equal(again.device_points_xyz().to_numpy(), want.device_points_xyz().to_numpy())
    assert blocking.reread().is_size_known()


# ----------------------------------------------------- UnorganizedPointCloud --

def unorganized_data(n, seed, nan=0):
    xyz, rgba, snr = make_cloud(1, n, seed, holes=0)
    xyz, rgba, snr = xyz[0], rgba[0], snr[0]
    xyz[:nan] = np.nan
    return xyz, rgba, snr


def test_unorganized_accessors(device, on):
    xyz, rgba, snr = unorganized_data(100, 60)
    u = upload_unorganized(device, xyz, rgba, snr)
    assert u.size() == 100 and u.has_colors() and u.has_snrs() and not u.is_empty()
    assert u.device() == device
    pxyz, pxyzw, psnr = u.device_points_xyz(**on.kw), u.device_points_xyzw(**on.kw), u.device_snrs(**on.kw)
    colors = u.device_colors(F.ColorBGR_SRGB, **on.kw)
    on.sync()
    assert pxyz.shape == (100, 3) and pxyzw.shape == (100, 4) and psnr.shape == (100,)
    np.testing.assert_array_equal(pxyz.to_numpy(), xyz)
    np.testing.assert_array_equal(pxyzw.to_numpy(), np.concatenate([xyz, np.ones((100, 1), np.float32)], 1))
    np.testing.assert_array_equal(psnr.to_numpy(), snr)
    assert_colors(colors, rgba, F.ColorBGR_SRGB)
    plain = upload_unorganized(device, xyz)
    assert not plain.has_colors() and not plain.has_snrs()
    with pytest.raises(RuntimeError):
        plain.device_snrs()
    with pytest.raises(RuntimeError):
        plain.device_colors(F.ColorRGBA)


@pytest.mark.parametrize("fmt", COLOR_FORMATS, ids=lambda f: f.name)
def test_unorganized_colors_every_format(device, fmt):
    xyz, rgba, snr = unorganized_data(64, 61)
    rgba[:16, :3] = np.arange(0, 16, dtype=np.uint8)[:, None]  # dark codes (linear segment of sRGB)
    assert_colors(upload_unorganized(device, xyz, rgba, snr).device_colors(fmt), rgba, fmt)


def voxel_cloud(n, size, seed):
    """Points well inside their voxels (never within 0.1 voxel of a face) plus one
    anchor at the min corner, so that float and double voxel indices agree."""
    rng = np.random.default_rng(seed)
    base = np.array([-123.5, 40.25, 700.0])
    cells = rng.integers(0, [4, 3, 3], (n, 3))
    xyz = (base + (cells + rng.uniform(0.1, 0.9, (n, 3))) * size).astype(np.float32)
    xyz[0] = base
    xyz[5] = xyz[17] = xyz[33] = np.nan  # ignored
    rgba = reference((n, 4), np.uint8, seed)
    snr = rng.uniform(0.5, 10.0, n).astype(np.float32)
    snr[::9] = 0
    return xyz, rgba, snr


@pytest.mark.parametrize("attrs", [True, False], ids=["rgba_snr", "xyz_only"])
@pytest.mark.parametrize("min_points", [1, 3, 9])
def test_voxel_downsampled_matches_numpy_grid(device, on, min_points, attrs):
    size = 25.0
    xyz, rgba, snr = voxel_cloud(240, size, 70)
    if not attrs:
        rgba = snr = None
    want_xyz, want_rgba, want_snr = voxel_ref(xyz, rgba, snr, size, min_points)
    assert 0 < len(want_xyz) <= 36 and (min_points == 1 or len(want_xyz) < 36)
    u = upload_unorganized(device, xyz, rgba, snr)
    v = u.voxel_downsampled(size, min_points, **on.kw)
    on.sync()
    assert v.size() == len(want_xyz)
    assert v.has_colors() == attrs and v.has_snrs() == attrs
    got = v.device_points_xyz().to_numpy()
    # As a set (sorted rows), then in the documented ascending voxel order.
    order_got, order_want = np.lexsort(got.T[::-1]), np.lexsort(want_xyz.T[::-1])
    assert_points_close(got[order_got], want_xyz[order_want])
    assert_points_close(got, want_xyz)
    if attrs:
        np.testing.assert_array_equal(v.device_colors(F.ColorRGBA).to_numpy(), want_rgba)
        assert_snr_close(v.device_snrs().to_numpy(), want_snr)
    assert u.size() == 240  # source unchanged


def test_voxel_grid_of_an_organized_cloud(device, on):
    # PointCloud.voxel_downsampled: the numpy reference of the valid points, and the
    # compacted cloud's voxels exactly (normals included), without the compaction.
    size = 25.0
    xyz, rgba, snr = voxel_cloud(240, size, 72)
    grid = upload(device, xyz.reshape(12, 20, 3), rgba.reshape(12, 20, 4), snr.reshape(12, 20))
    want_xyz, want_rgba, want_snr = voxel_ref(xyz, rgba, snr, size, 2)
    v = grid.voxel_downsampled(size, 2, **on.kw)
    on.sync()
    assert v.size() == len(want_xyz) and not v.has_normals()
    assert_points_close(v.device_points_xyz().to_numpy(), want_xyz)
    np.testing.assert_array_equal(v.device_colors(F.ColorRGBA).to_numpy(), want_rgba)
    assert_snr_close(v.device_snrs().to_numpy(), want_snr)
    normals = grid.device_normals_xyz()
    with_normals = grid.voxel_downsampled(size, 2, normals=normals, **on.kw)
    compacted = grid.to_unorganized_point_cloud(normals=normals).voxel_downsampled(size, 2)
    on.sync()
    assert with_normals.has_normals()
    np.testing.assert_array_equal(with_normals.device_points_xyz().to_numpy(), compacted.device_points_xyz().to_numpy())
    np.testing.assert_array_equal(with_normals.device_normals_xyz().to_numpy(), compacted.device_normals_xyz().to_numpy())
    with pytest.raises(ValueError):
        grid.voxel_downsampled(0.0, 1)
    with pytest.raises(ValueError):
        grid.voxel_downsampled(size, 1, normals=upload(device, xyz.reshape(20, 12, 3)).device_normals_xyz())


def test_voxel_downsampled_edge_cases(device):
    xyz, rgba, snr = voxel_cloud(60, 25.0, 71)
    u = upload_unorganized(device, xyz, rgba, snr)
    one = u.voxel_downsampled(1e6, 1)
    assert one.size() == 1
    want, _, _ = voxel_ref(xyz, rgba, snr, 1e6, 1)
    assert_points_close(one.device_points_xyz().to_numpy(), want)
    assert u.voxel_downsampled(1.0, 1000).size() == 0
    for size, mp in [(0.0, 1), (-1.0, 1), (float("nan"), 1), (1.0, 0)]:
        with pytest.raises(ValueError):
            u.voxel_downsampled(size, mp)


def test_unorganized_transform_and_transformed(device, on):
    xyz, rgba, snr = unorganized_data(80, 62, nan=2)
    r = rotation(0, -0.4, (10, 20, -30))
    u = upload_unorganized(device, xyz, rgba, snr)
    out = u.transformed(r.reshape(-1).tolist(), **on.kw)
    on.sync()
    assert_points_close(out.device_points_xyz().to_numpy(), transform_ref(xyz, r))
    np.testing.assert_allclose(out.transformation_matrix(), r, atol=1e-7)
    np.testing.assert_array_equal(u.device_points_xyz().to_numpy(), xyz)
    u.transform(r, **on.kw)
    u.transform(r, **on.kw)
    on.sync()
    assert_points_close(u.device_points_xyz().to_numpy(), transform_ref(transform_ref(xyz, r), r))
    np.testing.assert_allclose(u.transformation_matrix(), r.astype(np.float64) @ r, atol=1e-5)
    np.testing.assert_array_equal(u.device_snrs().to_numpy(), snr)


def test_unorganized_extend_concatenates(device, on):
    a = unorganized_data(50, 63)
    b = unorganized_data(30, 64)
    ua = upload_unorganized(device, *a)
    ua.transform(rotation(2, 0.1))
    kept = ua.transformation_matrix()
    before = ua.device_points_xyz().to_numpy()
    ua.extend(upload_unorganized(device, *b), **on.kw)
    on.sync()
    assert ua.size() == 80
    np.testing.assert_array_equal(ua.device_points_xyz().to_numpy(), np.concatenate([before, b[0]]))
    np.testing.assert_array_equal(ua.device_colors(F.ColorRGBA).to_numpy(), np.concatenate([a[1], b[1]]))
    np.testing.assert_array_equal(ua.device_snrs().to_numpy(), np.concatenate([a[2], b[2]]))
    np.testing.assert_array_equal(ua.transformation_matrix(), kept)
    # Without attributes on both sides.
    pa = upload_unorganized(device, a[0])
    pa.extend(upload_unorganized(device, b[0]))
    assert not pa.has_colors() and not pa.has_snrs()
    np.testing.assert_array_equal(pa.device_points_xyz().to_numpy(), np.concatenate([a[0], b[0]]))


def test_unorganized_extend_attribute_rules(device):
    a = unorganized_data(20, 65)
    b = unorganized_data(10, 66)
    plain = upload_unorganized(device, a[0])
    with pytest.raises(ValueError):
        plain.extend(upload_unorganized(device, *b))
    colored = upload_unorganized(device, a[0], a[1])
    with pytest.raises(ValueError):
        colored.extend(upload_unorganized(device, *b))  # colours but no SNR on one side
    assert colored.size() == 20 and plain.size() == 20
    # A cloud of 0 points takes the other's attributes.
    empty = upload(device, np.full((3, 4, 3), np.nan, np.float32)).to_unorganized_point_cloud()
    assert empty.size() == 0
    empty.extend(upload_unorganized(device, *b))
    assert empty.size() == 10 and empty.has_colors() and empty.has_snrs()
    np.testing.assert_array_equal(empty.device_points_xyz().to_numpy(), b[0])
    np.testing.assert_array_equal(empty.device_colors(F.ColorRGBA).to_numpy(), b[1])
    full = upload_unorganized(device, *b)
    full.extend(upload(device, np.full((2, 2, 3), np.nan, np.float32)).to_unorganized_point_cloud())
    assert full.size() == 10
    np.testing.assert_array_equal(full.device_snrs().to_numpy(), b[2])


def test_paint_uniform_color(device, on):
    xyz, rgba, snr = unorganized_data(40, 67)
    u = upload_unorganized(device, xyz, rgba, snr)
    u.paint_uniform_color((10, 200, 3, 128), **on.kw)
    on.sync()
    np.testing.assert_array_equal(u.device_colors(F.ColorRGBA).to_numpy(), np.tile([10, 200, 3, 128], (40, 1)))
    plain = upload_unorganized(device, xyz)
    plain.paint_uniform_color([1, 2, 3, 4])
    assert plain.has_colors()
    rgba1 = np.tile(np.array([1, 2, 3, 4], np.uint8), (40, 1))
    assert_colors(plain.device_colors(F.ColorBGRA), rgba1, F.ColorBGRA)
    for bad in [(256, 0, 0, 0), (0, -1, 0, 0)]:
        with pytest.raises(ValueError):
            plain.paint_uniform_color(bad)


def test_centroid_and_center(device, on):
    xyz, rgba, snr = unorganized_data(90, 68, nan=3)
    u = upload_unorganized(device, xyz, rgba, snr)
    want = xyz[valid_of(xyz)].astype(np.float64).mean(0)
    got = np.asarray(u.centroid(**on.kw), np.float64)
    assert got.shape == (3,)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-3)
    u.center(**on.kw)
    on.sync()
    np.testing.assert_allclose(u.centroid(), 0, atol=1e-3)
    assert_points_close(u.device_points_xyz().to_numpy(), xyz.astype(np.float64) - want, atol=2e-3)
    np.testing.assert_allclose(u.transformation_matrix()[:3, 3], -want, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(u.transformation_matrix()[:3, :3], np.eye(3), atol=0)
    empty = upload(device, np.full((2, 3, 3), np.nan, np.float32)).to_unorganized_point_cloud()
    with pytest.raises(RuntimeError):
        empty.centroid()


def test_device_centroid(device, on):
    xyz, rgba, snr = unorganized_data(301, 69, nan=5)
    u = upload_unorganized(device, xyz, rgba, snr)
    c = u.device_centroid(**on.kw)
    on.sync()
    assert c.format == F.PointXYZ and c.shape == (1, 3)
    got = c.to_numpy().reshape(3)
    np.testing.assert_allclose(got, xyz[valid_of(xyz)].astype(np.float64).mean(0), rtol=1e-6, atol=1e-4)
    np.testing.assert_array_equal(got, np.asarray(u.centroid(), np.float32))
    none = upload_unorganized(device, np.full((7, 3), np.nan, np.float32))
    assert np.isnan(none.device_centroid(**on.kw).to_numpy()).all()


def test_center_on_a_stream_reads_its_translation_later(device):
    xyz, rgba, snr = unorganized_data(120, 70, nan=4)
    want = xyz[valid_of(xyz)].astype(np.float64).mean(0)
    u = upload_unorganized(device, xyz, rgba, snr)
    stream = da.Stream(device)
    u.center(stream=stream)
    np.testing.assert_allclose(u.transformation_matrix()[:3, 3], -want, rtol=1e-5, atol=1e-3)
    assert_points_close(u.device_points_xyz().to_numpy(), xyz.astype(np.float64) - want, atol=2e-3)
    none = upload_unorganized(device, np.full((5, 3), np.nan, np.float32))
    none.center(stream=stream)  # the centroid is still on the device: nothing to raise yet
    with pytest.raises(RuntimeError, match="no valid"):
        none.transformation_matrix()


# ------------------------------------------------------------------ Frame2D --

@pytest.mark.parametrize("fmt", COLOR_FORMATS, ids=lambda f: f.name)
def test_frame_image_every_format_and_fill(device, on, fmt):
    rgba = reference((12, 16, 4), np.uint8, seed=80)
    rgba[0, :, :3] = np.arange(0, 256, 16, dtype=np.uint8)[:, None]
    frame = da.Frame2D(da.from_numpy(rgba, format=F.ColorRGBA, device=device))
    assert (frame.height(), frame.width(), frame.size()) == (12, 16, 192) and not frame.is_empty()
    assert frame.device() == device
    out = frame.image_device_array(fmt, **on.kw)
    on.sync()
    assert_colors(out, rgba, fmt)
    c = da.format_channels(fmt)
    dst = da.from_numpy(np.zeros((12, 16, c), da.format_dtype(fmt)), format=fmt, device=device)
    assert frame.image_device_array(dst, **on.kw) is None
    on.sync()
    assert_colors(dst, rgba, fmt)


def test_frame_fill_rejects_bad_destinations(device):
    rgba = reference((12, 16, 4), np.uint8, seed=81)
    frame = da.Frame2D(da.from_numpy(rgba, format=F.ColorRGBA, device=device))
    with pytest.raises(ValueError):
        frame.image_device_array(da.from_numpy(np.zeros((16, 12, 4), np.uint8), format=F.ColorBGRA, device=device))
    with pytest.raises(ValueError):
        frame.image_device_array(da.from_numpy(np.zeros((12, 16, 3), np.float32), format=F.PointXYZ, device=device))
    with pytest.raises(ValueError):
        frame.image_device_array(F.PointXYZ)
    with pytest.raises(ValueError):
        da.Frame2D(da.from_numpy(rgba, format=F.ColorBGRA, device=device))
    with pytest.raises(RuntimeError):
        da.Frame2D().image_device_array(F.ColorRGB)


# ---------------------------------------------------------------- bad input --

def test_construction_rejects_wrong_formats_and_sizes(device):
    xyz, rgba, snr = make_cloud(6, 8, 90)
    x = da.from_numpy(xyz, format=F.PointXYZ, device=device)
    c = da.from_numpy(rgba, format=F.ColorRGBA, device=device)
    s = da.from_numpy(snr, format=F.SNR, device=device)
    xyzw = da.from_numpy(np.concatenate([xyz, np.ones((6, 8, 1), np.float32)], -1), format=F.PointXYZW, device=device)
    bgra = da.from_numpy(rgba, format=F.ColorBGRA, device=device)
    normals = da.from_numpy(xyz, format=F.NormalXYZ, device=device)
    z = da.from_numpy(xyz[..., 2].copy(), format=F.PointZ, device=device)
    for args in [(xyzw,), (normals,), (x, bgra), (x, c, z), (x, None, c)]:
        with pytest.raises(ValueError):
            da.PointCloud(*args)
        with pytest.raises(ValueError):
            da.UnorganizedPointCloud(*args)
    small_c = da.from_numpy(rgba[:5], format=F.ColorRGBA, device=device)
    transposed_s = da.from_numpy(np.ascontiguousarray(snr.T), format=F.SNR, device=device)
    flat = da.from_numpy(xyz.reshape(-1, 3), format=F.PointXYZ, device=device)
    for args in [(x, small_c), (x, None, transposed_s), (flat,)]:
        with pytest.raises(ValueError):
            da.PointCloud(*args)
    with pytest.raises(ValueError):
        da.UnorganizedPointCloud(flat, da.from_numpy(rgba.reshape(-1, 4)[:40], format=F.ColorRGBA, device=device))
    with pytest.raises(TypeError):
        da.PointCloud(xyz)  # a numpy array, not a DeviceArray


def test_wrong_enum_types_are_type_errors(device):
    xyz, rgba, snr = make_cloud(8, 8, 91)
    cloud = upload(device, xyz, rgba, snr)
    with pytest.raises(TypeError):
        cloud.downsample(0)
    with pytest.raises(TypeError):
        cloud.downsampled(da.Downsampling.by2x2.value)
    assert (cloud.height(), cloud.width()) == (8, 8)
    with pytest.raises(TypeError):
        cloud.image_device_array(F.ColorRGBA.value)
    u = cloud.to_unorganized_point_cloud()
    with pytest.raises(TypeError):
        u.device_colors(5)
    frame = da.Frame2D(da.from_numpy(rgba, format=F.ColorRGBA, device=device))
    with pytest.raises(TypeError):
        frame.image_device_array(5)
    with pytest.raises(ValueError):
        cloud.image_device_array(F.PointXYZ)
    with pytest.raises(ValueError):
        u.device_colors(F.SNR)


# ------------------------------------------------------- outlier removal --

def uneven_cloud(seed):
    """A dense patch, a sparse patch and isolated far points (distinct points)."""
    rng = np.random.default_rng(seed)
    dense = np.c_[rng.uniform(0, 80, (900, 2)), rng.uniform(500, 502, 900)]
    sparse = np.c_[rng.uniform(200, 400, (200, 2)), rng.uniform(650, 655, 200)]
    far = rng.uniform(-2000, 2000, (15, 3))
    xyz = np.concatenate([dense, sparse, far]).astype(np.float32)
    return xyz[rng.permutation(len(xyz))]


def statistical_reference(xyz, k, ratio):
    """Kept indices and the points too close to the threshold for float rounding to be sure."""
    p = xyz.astype(np.float64)
    d = np.sqrt(((p[:, None, :] - p[None, :, :]) ** 2).sum(-1))
    means = np.sort(d, axis=1)[:, :min(k, len(p))].mean(axis=1)
    threshold = means.mean() + ratio * means.std(ddof=1)
    return np.flatnonzero(means <= threshold), np.abs(means - threshold) <= 1e-4 * threshold


def radius_reference(xyz, radius, min_points):
    d2 = ((xyz[:, None, :] - xyz[None, :, :]) ** 2).sum(-1, dtype=np.float32)
    return np.flatnonzero((d2 < np.float32(radius) * np.float32(radius)).sum(1) > min_points)


def kept_indices(xyz, out):
    """Indices of the rows of `out` in `xyz` (distinct points, in order)."""
    lookup = {tuple(p): i for i, p in enumerate(xyz.tolist())}
    return np.array([lookup[tuple(p)] for p in out.tolist()], dtype=np.int64)


@pytest.mark.parametrize("k, ratio", [(20, 2.0), (6, 1.0), (32, 0.5)])
def test_statistical_outliers_removed_matches_brute_force(device, on, k, ratio):
    xyz = uneven_cloud(3)
    rgba = reference((len(xyz), 4), np.uint8, 4)
    snr = np.arange(len(xyz), dtype=np.float32)
    u = upload_unorganized(device, xyz, rgba, snr)
    out = u.statistical_outliers_removed(k, ratio, **on.kw)
    on.sync()
    want, borderline = statistical_reference(xyz, k, ratio)
    assert borderline.sum() < 3
    got = kept_indices(xyz, out.device_points_xyz().to_numpy())
    sure = ~borderline
    np.testing.assert_array_equal(got[sure[got]], want[sure[want]])
    assert np.all(np.diff(got) > 0) and len(got) < len(xyz)  # in order, something removed
    np.testing.assert_array_equal(out.device_colors(F.ColorRGBA).to_numpy(), rgba[got])
    np.testing.assert_array_equal(out.device_snrs().to_numpy(), snr[got])
    assert u.size() == len(xyz)  # source unchanged
    u.remove_statistical_outliers(k, ratio, **on.kw)
    on.sync()
    assert u.size() == out.size()


@pytest.mark.parametrize("radius, min_points", [(6.0, 3), (15.0, 12), (0.01, 1)])
def test_radius_outliers_removed_matches_brute_force(device, on, radius, min_points):
    xyz = uneven_cloud(5)
    u = upload_unorganized(device, xyz)
    out = u.radius_outliers_removed(radius, min_points, **on.kw)
    on.sync()
    got = kept_indices(xyz, out.device_points_xyz().to_numpy()) if out.size() else np.zeros(0, np.int64)
    np.testing.assert_array_equal(got, radius_reference(xyz, radius, min_points))
    u.remove_radius_outliers(radius, min_points, **on.kw)
    on.sync()
    assert u.size() == out.size()


def test_outlier_removal_refuses_bad_parameters(device):
    u = upload_unorganized(device, uneven_cloud(1))
    for bad in [lambda: u.statistical_outliers_removed(0, 2.0), lambda: u.statistical_outliers_removed(33, 2.0),
                lambda: u.statistical_outliers_removed(20, -1.0), lambda: u.radius_outliers_removed(0.0, 2),
                lambda: u.radius_outliers_removed(5.0, 0)]:
        with pytest.raises(ValueError):
            bad()


def test_copy_and_deepcopy_are_deep_copies_on_the_same_device(device):
    # Open3D scripts copy.deepcopy(cloud) before transforming one of the two.
    import copy
    xyz = reference((3, 4, 3), np.float32)
    rgba = reference((3, 4, 4), np.uint8)
    pose = np.eye(4, dtype=np.float32)
    pose[:3, 3] = (10, 20, 30)
    for make, points, colors in ((upload, xyz, rgba), (upload_unorganized, xyz.reshape(-1, 3), rgba.reshape(-1, 4))):
        for duplicate in (copy.copy, copy.deepcopy):
            cloud = make(device, points, colors)
            twin = duplicate(cloud)
            assert type(twin) is type(cloud) and twin.device() == cloud.device()
            cloud.transform(pose)  # moves the original only
            np.testing.assert_array_equal(twin.device_points_xyz().to_numpy(), points)
            np.testing.assert_array_equal(twin.transformation_matrix(), np.eye(4, dtype=np.float32))
            np.testing.assert_array_equal(cloud.transformation_matrix(), pose)
            colors_of = twin.image_device_array if make is upload else twin.device_colors
            np.testing.assert_array_equal(colors_of(da.Format.ColorRGBA).to_numpy(), colors)
    for duplicate in (copy.copy, copy.deepcopy):
        arr = da.from_numpy(xyz.reshape(-1, 3), format=da.Format.PointXYZ, device=device)
        mat = arr.to_gpu_mat_nd()  # shares arr's memory
        twin_arr, twin_mat = duplicate(arr), duplicate(mat)
        mat.upload(np.zeros((12, 3), np.float32))  # overwrites arr, not the copies
        np.testing.assert_array_equal(arr.to_numpy(), 0)
        np.testing.assert_array_equal(twin_arr.to_numpy(), xyz.reshape(-1, 3))
        np.testing.assert_array_equal(twin_mat.download().reshape(-1, 3), xyz.reshape(-1, 3))
    for empty in (da.GpuMatND(), da.PointCloud()):  # an empty object's copy is empty
        assert copy.deepcopy(empty).empty() if hasattr(empty, "empty") else copy.deepcopy(empty).is_empty()
