"""local_point_cloud_registration, its parameters and result, and the normals of
unorganized clouds, on every device."""

import numpy as np
import pytest

import devicearray as da

F = da.Format


def surface(step=3.0, half=300.0, noise=0.1, seed=0):
    """Points of a bumpy surface about 1 m from the camera: every degree of freedom of a
    rigid motion changes how it fits itself."""
    g = np.arange(-half, half + step / 2, step, dtype=np.float64)
    x, y = np.meshgrid(g, g)
    z = 1000 + 30 * np.sin(x / 80) * np.cos(y / 60) + 20 * np.sin((x + y) / 50)
    rng = np.random.default_rng(seed)
    z = z + rng.normal(0, noise, size=z.shape)
    return np.stack([x, y, z], axis=-1).reshape(-1, 3)


def rigid(rx, ry, rz, t):
    """Rotation by rx, ry, rz degrees about x, then y, then z, then translation t."""
    ax, ay, az = np.radians([rx, ry, rz])
    cx, sx, cy, sy, cz, sz = np.cos(ax), np.sin(ax), np.cos(ay), np.sin(ay), np.cos(az), np.sin(az)
    rxm = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    rym = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rzm = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    m = np.eye(4)
    m[:3, :3] = rzm @ rym @ rxm
    m[:3, 3] = t
    return m


def cloud(points, device):
    return da.UnorganizedPointCloud(da.from_numpy(np.ascontiguousarray(points, dtype=np.float32),
                                                  format=F.PointXYZ, device=device))


def moved(points, m):
    return points @ m[:3, :3].T + m[:3, 3]


@pytest.mark.parametrize("on_stream", [False, True], ids=["blocking", "stream"])
def test_recovers_a_known_motion(device, on_stream):
    target_points = surface()
    truth = rigid(1.5, -1.0, 2.0, [4.0, -3.0, 2.0])
    # The source sees most of the same surface, from where `truth` maps it onto the target.
    part = target_points[target_points[:, 0] > -200]
    source_points = moved(part, np.linalg.inv(truth))
    target, source = cloud(target_points, device), cloud(source_points, device)
    params = da.LocalPointCloudRegistrationParameters(max_correspondence_distance=15.0, max_iterations=100)
    stream = da.Stream(device) if on_stream else None
    r = da.local_point_cloud_registration(target, source, params, stream=stream)
    assert r.converged
    assert r.transform.dtype == np.float32 and r.transform.shape == (4, 4)
    rotation_error = np.degrees(np.arccos(np.clip((np.trace(r.transform[:3, :3].T @ truth[:3, :3]) - 1) / 2, -1, 1)))
    assert rotation_error < 0.05
    assert np.linalg.norm(r.transform[:3, 3] - truth[:3, 3]) < 0.5
    assert 0.9 < r.source_coverage <= 1.0
    assert 0 < r.root_mean_square_error < 1.0
    assert "converged=True" in repr(r)


def test_initial_transform_and_defaults(device):
    points = surface(step=4.0)
    target = cloud(points, device)
    target.estimate_normals()
    assert target.has_normals()
    shift = rigid(0, 0, 0, [0, 0, 200.0])
    # Far apart: nothing pairs up unless the initial transform brings the views together.
    source = cloud(moved(points, shift), device)
    apart = da.local_point_cloud_registration(target, source)
    assert not apart.converged
    assert apart.source_coverage == 0.0
    together = da.local_point_cloud_registration(target, source, initial_transform=np.linalg.inv(shift))
    assert together.converged
    assert np.allclose(together.transform, np.linalg.inv(shift), atol=1e-2)
    p = da.LocalPointCloudRegistrationParameters()
    assert p.max_correspondence_distance == 10.0 and p.max_iterations == 200
    p.max_iterations = 3
    assert p.max_iterations == 3


def test_bad_arguments_are_refused(device):
    points = cloud(surface(step=10.0), device)
    with pytest.raises(ValueError, match="maxCorrespondenceDistance"):
        da.local_point_cloud_registration(
            points, points, da.LocalPointCloudRegistrationParameters(max_correspondence_distance=-1.0))
    # A coverage is a fraction: a minimum of 2 could never be met.
    with pytest.raises(ValueError, match=r"minSourceCoverage is 2\.000000; .* must be in \[0, 1\]"):
        da.local_point_cloud_registration(
            points, points, da.LocalPointCloudRegistrationParameters(min_source_coverage=2.0))
    with pytest.raises(ValueError, match="coverageChangeThreshold"):
        da.local_point_cloud_registration(
            points, points, da.LocalPointCloudRegistrationParameters(coverage_change_threshold=1.5))
    with pytest.raises(ValueError):
        da.local_point_cloud_registration(points, points, initial_transform=np.zeros((3, 3)))


def test_unorganized_normals_face_the_viewpoint(device):
    points = surface(step=4.0, noise=0.0)
    c = cloud(points, device)
    assert not c.has_normals()
    c.estimate_normals(12)
    n = c.device_normals_xyz().to_numpy().reshape(-1, 3)
    assert np.all(np.einsum("ij,ij->i", n, points) < 0)  # towards the origin
    # Transforming turns them with the points; the voxel grid averages them.
    turned = c.transformed(rigid(0, 0, 90, [0, 0, 0]))
    t = turned.device_normals_xyz().to_numpy().reshape(-1, 3)
    assert np.allclose(t[:, 0], -n[:, 1], atol=1e-5)
    v = c.voxel_downsampled(20.0, 1).device_normals_xyz().to_numpy().reshape(-1, 3)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_organized_plane_fit_normals(device):
    h, w = 20, 30
    y, x = np.mgrid[0:h, 0:w].astype(np.float32) * 4
    xyz = np.stack([x, y, 1000 + 0.5 * x], axis=-1).astype(np.float32)
    pc = da.PointCloud(da.from_numpy(xyz, format=F.PointXYZ, device=device))
    n = pc.device_normals_xyz(window_size=da.PointCloud.DEFAULT_NORMAL_WINDOW_SIZE).to_numpy()
    assert np.allclose(n, np.array([0.5, 0, -1]) / np.sqrt(1.25), atol=1e-4)


def test_plane_fit_restricted_to_what_a_region_of_interest_keeps(device):
    # A tilted plane, a pose and a box in the pose's frame around its middle: the points the
    # box keeps get the unrestricted plane fit, the others (far from the faces) NaN.
    h, w = 24, 40
    y, x = np.mgrid[0:h, 0:w].astype(np.float32) * 4
    xyz = np.stack([x, y, 1000 + 0.5 * x], axis=-1).astype(np.float32)
    pc = da.PointCloud(da.from_numpy(xyz, format=F.PointXYZ, device=device))
    pose = rigid(0, 0, 30, [5, -7, 0]).astype(np.float32)
    box = da.RegionOfInterestBox((20, 10, 900), (100, 10, 900), (20, 70, 900), -1, 200)
    full = pc.device_normals_xyz(window_size=5).to_numpy().reshape(-1, 3)
    part = pc.device_normals_xyz(window_size=5, kept_by=box, box_from_cloud=pose).to_numpy().reshape(-1, 3)
    kept = pc.transformed(pose).masked_by_region_of_interest(box).device_points_xyz().to_numpy().reshape(-1, 3)
    inside = ~np.isnan(kept[:, 0])
    assert 0.1 * len(kept) < inside.sum() < 0.9 * len(kept)
    np.testing.assert_array_equal(part[inside], full[inside])
    assert np.isnan(part[~inside, 0]).mean() > 0.99
    with pytest.raises(ValueError, match="needs window_size"):
        pc.device_normals_xyz(kept_by=box)
    with pytest.raises(ValueError, match="needs kept_by"):
        pc.device_normals_xyz(window_size=5, box_from_cloud=pose)
