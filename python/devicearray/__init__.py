"""devicearray: safe, fast handles to GPU-resident arrays on CUDA and OpenCL.

Everything is implemented in C++ (the ``_devicearray`` extension); this package
re-exports it. The type stubs (_devicearray.pyi) are generated from it at build
time. Batch processing of recorded frames on Dask is the optional submodule
``devicearray.dask`` (``pip install 'devicearray[dask]'``; ``python -m devicearray.batch``
is its command line).
"""

import sys as _sys

from ._devicearray import (
    ComputeBackend,
    ComputeDevice,
    DeviceArray,
    Downsampling,
    Event,
    Format,
    Frame2D,
    FrameLoop,
    GpuMatND,
    LocalPointCloudRegistrationParameters,
    LocalPointCloudRegistrationResult,
    LoopFrame,
    PipelineResult,
    PipelineStageResult,
    PipelineStages,
    PinholeCamera,
    PointCloud,
    RGBDImage,
    RegionOfInterestBox,
    Stream,
    UnorganizedPointCloud,
    convert,
    convert_into,
    format_channels,
    format_dtype,
    format_itemsize,
    from_dlpack,
    from_numpy,
    kDLCPU,
    kDLCUDA,
    kDLOpenCL,
    local_point_cloud_registration,
    point_cloud_from_depth_image,
    process_ply_file,
    project_to_rgbd_image,
    read_image,
    read_point_cloud,
    synchronize_stream,
    write_image,
    write_point_cloud,
)
from ._devicearray import _testing

# The test helpers live in the extension; make `import devicearray._testing` work.
_sys.modules[__name__ + "._testing"] = _testing

__version__ = "0.1.0"

__all__ = [
    "ComputeBackend",
    "ComputeDevice",
    "DeviceArray",
    "Downsampling",
    "Event",
    "Format",
    "Frame2D",
    "FrameLoop",
    "GpuMatND",
    "LocalPointCloudRegistrationParameters",
    "LocalPointCloudRegistrationResult",
    "LoopFrame",
    "PipelineResult",
    "PipelineStageResult",
    "PipelineStages",
    "PinholeCamera",
    "PointCloud",
    "RGBDImage",
    "RegionOfInterestBox",
    "Stream",
    "UnorganizedPointCloud",
    "convert",
    "convert_into",
    "format_channels",
    "format_dtype",
    "format_itemsize",
    "from_dlpack",
    "from_numpy",
    "kDLCPU",
    "kDLCUDA",
    "kDLOpenCL",
    "local_point_cloud_registration",
    "point_cloud_from_depth_image",
    "process_ply_file",
    "project_to_rgbd_image",
    "read_image",
    "read_point_cloud",
    "synchronize_stream",
    "write_image",
    "write_point_cloud",
]
