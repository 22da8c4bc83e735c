"""Hand the points of a devicearray PointCloud to PyTorch without a copy.

torch.from_dlpack(arr) calls arr.__dlpack__(stream=<torch's current stream>): the
library makes the data ready on torch's stream, and the tensor shares the device
memory. Work torch does on that memory is torch's to order: synchronize (or pass
the stream to the next devicearray call) before devicearray reads it again.

Run: PYTHONPATH=<build>/python python3 examples/python/point_cloud_to_torch.py
"""

import sys

import numpy as np

import devicearray as da


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

    # A 4 x 6 organized cloud (millimetres) with one missing point.
    height, width = 4, 6
    rows, cols = np.mgrid[0:height, 0:width].astype(np.float32)
    xyz = np.stack([cols * 10.0, rows * 10.0, np.full_like(rows, 500.0)], axis=2)
    xyz[1, 2] = np.nan
    cloud = da.PointCloud(da.from_numpy(xyz, format=da.Format.PointXYZ, device=device))

    points = cloud.device_points_xyz()  # a new DeviceArray of shape (4, 6, 3)
    tensor = torch.from_dlpack(points)  # zero-copy: same device memory

    assert tensor.data_ptr() == points.device_pointer()
    assert tuple(tensor.shape) == (height, width, 3) and tensor.dtype == torch.float32
    assert tensor.device == torch.device("cuda", device.ordinal())

    # Torch reads the points ...
    distance = torch.linalg.vector_norm(tensor, dim=2)
    np.testing.assert_allclose(distance.cpu().numpy(), np.linalg.norm(xyz, axis=2), rtol=1e-6)

    # ... and writes them: the change is in devicearray's memory, once torch's
    # stream has run it.
    tensor[..., 2] += 1000.0
    torch.cuda.current_stream().synchronize()
    np.testing.assert_array_equal(points.to_numpy()[..., 2], xyz[..., 2] + 1000.0)

    print(f"{device}: torch tensor {tuple(tensor.shape)} shares devicearray's memory; ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
