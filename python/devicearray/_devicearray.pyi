"""
devicearray: safe, fast handles to GPU-resident arrays on CUDA and OpenCL (see API.md §9).
"""

from collections.abc import Sequence
import enum
from typing import Annotated, overload

from numpy.typing import NDArray


class ComputeBackend(enum.Enum):
    """The two compute backends."""

    cuda = 0

    opencl = 1

class ComputeDevice:
    """
    A handle to one CUDA device (its primary context) or one OpenCL device. Cheap to copy; handles compare equal when they name the same device.
    """

    @staticmethod
    def all() -> list[ComputeDevice]:
        """
        Every usable device of every backend of this build (CUDA first, then OpenCL).
        """

    @staticmethod
    def default_device() -> ComputeDevice:
        """
        DEVICEARRAY_BACKEND / DEVICEARRAY_DEVICE, else the first CUDA device, else the first OpenCL GPU, else the first OpenCL CPU. Raises RuntimeError when there is none.
        """

    @staticmethod
    def cuda(ordinal: int = 0) -> ComputeDevice:
        """
        CUDA device `ordinal` (IndexError when out of range, RuntimeError without CUDA).
        """

    @staticmethod
    def opencl(index: int = 0) -> ComputeDevice:
        """OpenCL device `index` among the OpenCL devices of all()."""

    @staticmethod
    def from_opencl(context: int, device: int, queue: int) -> ComputeDevice:
        """
        Adopts (retains) a cl_context, cl_device_id and cl_command_queue given as integers.
        """

    def backend(self) -> ComputeBackend: ...

    def ordinal(self) -> int:
        """CUDA ordinal, or the index among the OpenCL devices of all()."""

    def model(self) -> str: ...

    def vendor(self) -> str: ...

    def to_string(self) -> str: ...

    def is_valid(self) -> bool: ...

    def total_memory(self) -> int:
        """Bytes."""

    def free_memory(self) -> int:
        """Bytes."""

    def native_context(self) -> int:
        """CUcontext (primary context) or cl_context, as an integer."""

    def native_stream_handle(self) -> int:
        """The library's own cudaStream_t / cl_command_queue, as an integer."""

    def sdk_stream(self) -> Stream:
        """
        The library's own stream / queue of this device, as a (non-owning) Stream.
        """

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

    @overload
    def __eq__(self, arg: ComputeDevice, /) -> bool: ...

    @overload
    def __eq__(self, arg: object, /) -> bool: ...

    def __hash__(self) -> int: ...

class Stream:
    """
    A CUDA stream or OpenCL in-order command queue: owned by the library, or a non-owning wrapper of the caller's (Stream.wrap). Copies share the stream.
    """

    def __init__(self, device: ComputeDevice | None = None) -> None:
        """
        A new stream (CUDA, non-blocking) / queue on `device` (default device).
        """

    @staticmethod
    def wrap(device: ComputeDevice, handle: int) -> Stream:
        """
        Wraps the caller's cudaStream_t (0 = legacy default, 2 = per-thread default) or cl_command_queue, given as an integer; the caller keeps it alive.
        """

    def query_if_complete(self) -> bool:
        """True when all enqueued work has completed. Non-blocking."""

    def wait_for_completion(self) -> None:
        """Blocks until all enqueued work has completed."""

    def wait_event(self, event: Event) -> None:
        """
        Later work on this stream waits for `event` (device-side, no host sync).
        """

    def handle(self) -> int:
        """The cudaStream_t / cl_command_queue as an integer."""

    def device(self) -> ComputeDevice: ...

    def __repr__(self) -> str: ...

class Event:
    """A marker in a stream (timing-capable)."""

    def __init__(self, device: ComputeDevice) -> None: ...

    def record(self, stream: Stream) -> None:
        """Captures the work enqueued on `stream` so far. Non-blocking."""

    def query_if_complete(self) -> bool: ...

    def wait_for_completion(self) -> None: ...

    @staticmethod
    def elapsed_time(start: Event, end: Event) -> float:
        """Milliseconds between two recorded events."""

@overload
def synchronize_stream(stream: Stream) -> None:
    """Blocks until all work on `stream` has completed."""

@overload
def synchronize_stream(handle: int, backend: ComputeBackend) -> None:
    """
    Blocks until all work on the raw cudaStream_t / cl_command_queue `handle` has completed.
    """

class Format(enum.Enum):
    """The 14 DeviceArray formats (the seed's layout table)."""

    PointXYZ = 0

    PointXYZW = 1

    PointZ = 2

    SNR = 3

    NormalXYZ = 4

    ColorRGBA = 5

    ColorBGRA = 6

    ColorRGBA_SRGB = 7

    ColorBGRA_SRGB = 8

    ColorRGBAf = 9

    ColorRGB = 10

    ColorBGR = 11

    ColorRGB_SRGB = 12

    ColorBGR_SRGB = 13

def format_channels(format: Format) -> int:
    """Channel values per element of `format`."""

def format_dtype(format: Format) -> object:
    """numpy dtype of one channel value of `format`."""

def format_itemsize(format: Format) -> int:
    """Bytes per element of `format`."""

class GpuMatND:
    """
    cv::cuda::GpuMatND on CUDA and OpenCL: reference-counted device storage plus size, step (bytes) and an OpenCV type code. Slicing gives O(1) views that keep the storage alive.
    """

    @overload
    def __init__(self) -> None:
        """An empty array."""

    @overload
    def __init__(self, size: Sequence[int], type: object, device: ComputeDevice | None = None) -> None:
        """
        Allocates `size` (one entry per axis) of `type` (an OpenCV type code, or a numpy dtype for one channel) on `device` (default device). Contents are uninitialized.
        """

    @property
    def flags(self) -> int: ...

    @flags.setter
    def flags(self, arg: int, /) -> None: ...

    @property
    def dims(self) -> int: ...

    @property
    def size(self) -> list[int]:
        """Length of each axis (without the channel axis)."""

    @property
    def step(self) -> list[int]:
        """Byte step of each axis (step[-1] == elem_size())."""

    @overload
    def clone(self) -> GpuMatND:
        """Continuous deep copy. Blocking."""

    @overload
    def clone(self, stream: Stream) -> GpuMatND:
        """Continuous deep copy enqueued on `stream`. Non-blocking."""

    def create(self, size: Sequence[int], type: object) -> None: ...

    def upload(self, array: object, stream: Stream | None = None) -> None:
        """
        Copies a numpy array to the device, recreating this array when size or type differ. An array of this size plus a channel axis fills a multi-channel array in place. Without `stream`: blocking; with it: enqueued, and `array` must stay alive and unchanged until the stream completes.
        """

    def download(self, stream: Stream | None = None) -> object:
        """
        A numpy copy. Without `stream`: blocking. With `stream`: the copy is taken after the work enqueued on `stream` so far (and completes before returning).
        """

    def elem_size(self) -> int: ...

    def elem_size1(self) -> int: ...

    def empty(self) -> bool: ...

    def external(self) -> bool: ...

    def is_continuous(self) -> bool: ...

    def is_submatrix(self) -> bool: ...

    def total(self) -> int: ...

    def total_mem_size(self) -> int: ...

    def type(self) -> int: ...

    def depth(self) -> int: ...

    def channels(self) -> int: ...

    def device(self) -> ComputeDevice: ...

    def backend(self) -> ComputeBackend: ...

    def release(self) -> None: ...

    def swap(self, other: GpuMatND) -> None: ...

    def get_device_ptr(self) -> int:
        """CUDA: the device address of the first element. OpenCL: RuntimeError."""

    def get_opencl_buffer(self) -> tuple[int, int]:
        """
        OpenCL: (cl_mem, byte offset) of the first element. CUDA: RuntimeError.
        """

    def __getitem__(self, key: object) -> GpuMatND:
        """
        O(1) view: slices of step 1, integers (the axis is dropped) and '...'. Other steps raise IndexError.
        """

    def __len__(self) -> int: ...

    def __repr__(self) -> str: ...

    @property
    def shape(self) -> tuple:
        """
        Array-API shape: every axis, plus the channel axis when there is more than one channel.
        """

    @property
    def strides(self) -> tuple:
        """Strides in elements (channel values), matching shape."""

    @property
    def strides_in_bytes(self) -> tuple:
        """Strides in bytes, matching shape."""

    @property
    def ndim(self) -> int: ...

    @property
    def dtype(self) -> object:
        """numpy dtype of one channel value."""

    def to_numpy(self) -> object:
        """
        Blocking: an independent, writable, C-contiguous numpy copy of shape `shape`.
        """

    def __array__(self, dtype: object | None = None, *, copy: object | None = None) -> object:
        """numpy.asarray() support: a blocking host copy."""

    def __dlpack__(self, *, stream: object | None = None, max_version: object | None = None, dl_device: object | None = None, copy: object | None = None) -> object:
        """
        DLPack export per the Python array-API standard (zero-copy unless a copy is requested).
        """

    def __dlpack_device__(self) -> tuple: ...

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3 (CUDA arrays only; AttributeError otherwise)."""

class DeviceArray:
    """
    DeviceArray<Format> for every format: an owning, reference-counted, tightly packed device array with the seed's layout ([H,W,C] | [H,W] | [N,C] | [N]).
    """

    def __init__(self, format: Format) -> None:
        """An empty array of `format`."""

    @overload
    @staticmethod
    def allocate(format: Format, height: int, width: int, device: ComputeDevice | None = None) -> DeviceArray:
        """Organized height x width array (uninitialized). Blocking."""

    @overload
    @staticmethod
    def allocate(format: Format, count: int, device: ComputeDevice | None = None) -> DeviceArray:
        """Unorganized array of `count` elements (uninitialized). Blocking."""

    @property
    def format(self) -> Format: ...

    def size(self) -> int:
        """Points / pixels (not channels)."""

    def size_in_bytes(self) -> int: ...

    def backend(self) -> ComputeBackend: ...

    def device(self) -> ComputeDevice: ...

    def device_pointer(self) -> int:
        """
        CUDA: device address of element 0. OpenCL: the cl_mem (element 0 at byte_offset()).
        """

    def byte_offset(self) -> int: ...

    def is_empty(self) -> bool: ...

    def is_valid(self) -> bool: ...

    def is_organized(self) -> bool: ...

    def height(self) -> int: ...

    def width(self) -> int: ...

    def to_host(self) -> object:
        """Blocking: a numpy copy of shape `shape` (same as to_numpy())."""

    def copy_to_host(self, dst: Annotated[NDArray, dict(order='C', device='cpu')], stream: Stream) -> None:
        """
        Enqueues a copy into the writable, C-contiguous numpy array `dst` (at least size_in_bytes() bytes) on `stream`; `dst` must stay alive until the stream completes.
        """

    def to_gpu_mat_nd(self) -> GpuMatND:
        """
        A GpuMatND sharing this memory (size (H, W) or (N,), channels in the type).
        """

    @staticmethod
    def from_gpu_mat_nd(mat: GpuMatND, format: Format) -> DeviceArray:
        """Shares the memory of a continuous GpuMatND of the format's type."""

    def convert(self, to: Format, stream: Stream | None = None) -> DeviceArray:
        """
        A new array converted to format `to`. With `stream`: enqueued, non-blocking; without: blocking.
        """

    def __repr__(self) -> str: ...

    @property
    def shape(self) -> tuple:
        """
        Array-API shape: every axis, plus the channel axis when there is more than one channel.
        """

    @property
    def strides(self) -> tuple:
        """Strides in elements (channel values), matching shape."""

    @property
    def strides_in_bytes(self) -> tuple:
        """Strides in bytes, matching shape."""

    @property
    def ndim(self) -> int: ...

    @property
    def dtype(self) -> object:
        """numpy dtype of one channel value."""

    def to_numpy(self) -> object:
        """
        Blocking: an independent, writable, C-contiguous numpy copy of shape `shape`.
        """

    def __array__(self, dtype: object | None = None, *, copy: object | None = None) -> object:
        """numpy.asarray() support: a blocking host copy."""

    def __dlpack__(self, *, stream: object | None = None, max_version: object | None = None, dl_device: object | None = None, copy: object | None = None) -> object:
        """
        DLPack export per the Python array-API standard (zero-copy unless a copy is requested).
        """

    def __dlpack_device__(self) -> tuple: ...

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3 (CUDA arrays only; AttributeError otherwise)."""

def from_numpy(array: object, format: Format | None = None, device: ComputeDevice | None = None) -> GpuMatND | DeviceArray:
    """
    Blocking upload of a numpy array (non-contiguous input is packed). Without `format`: a GpuMatND of the array's shape and dtype (one channel; the last axis is not folded). With `format`: a DeviceArray, the array being (H, W, C) / (N, C) (or (H, W) / (N,) for one-channel formats) of the format's dtype.
    """

def convert(src: DeviceArray, to: Format, stream: Stream | None = None) -> DeviceArray:
    """convert<To>(src, stream): a new array of format `to` (API.md §6a)."""

def convert_into(dst: DeviceArray, src: DeviceArray, stream: Stream | None = None) -> None:
    """Converts `src` into the memory of `dst` (same size and device)."""

kDLCPU: int = 1

kDLCUDA: int = 2

kDLOpenCL: int = 4

def from_dlpack(obj: object, *, device: ComputeDevice | None = None, copy: bool | None = None) -> GpuMatND:
    """
    Imports any DLPack producer (called with keyword arguments and, on CUDA, the library's own stream), a raw DLPack capsule, or a __cuda_array_interface__ object, zero-copy (the producer stays alive as long as the memory is used). Host tensors are copied to `device` (default device). Returns a GpuMatND with every axis as a dimension.
    """

class Downsampling(enum.Enum):
    by2x2 = 0

    by3x3 = 1

    by4x4 = 2

class RegionOfInterestBox:
    """
    Oriented box: origin O, points A and B spanning its base, and the extent [min_extent, max_extent] along the base normal.
    """

    def __init__(self, origin: Sequence[float], point_a: Sequence[float], point_b: Sequence[float], min_extent: float, max_extent: float) -> None: ...

    @property
    def origin(self) -> list[float]: ...

    @origin.setter
    def origin(self, arg: Sequence[float], /) -> None: ...

    @property
    def point_a(self) -> list[float]: ...

    @point_a.setter
    def point_a(self, arg: Sequence[float], /) -> None: ...

    @property
    def point_b(self) -> list[float]: ...

    @point_b.setter
    def point_b(self, arg: Sequence[float], /) -> None: ...

    @property
    def min_extent(self) -> float: ...

    @min_extent.setter
    def min_extent(self, arg: float, /) -> None: ...

    @property
    def max_extent(self) -> float: ...

    @max_extent.setter
    def max_extent(self, arg: float, /) -> None: ...

class PointCloud:
    """
    Organized H x W point cloud on one device: XYZ (NaN = missing), optional linear RGBA colour and SNR.
    """

    @overload
    def __init__(self) -> None: ...

    @overload
    def __init__(self, xyz: DeviceArray, colors: DeviceArray | None = None, snrs: DeviceArray | None = None) -> None:
        """
        Zero-copy from organized DeviceArrays (PointXYZ, ColorRGBA, SNR) of one size and device.
        """

    def height(self) -> int: ...

    def width(self) -> int: ...

    def size(self) -> int: ...

    def is_empty(self) -> bool: ...

    def has_colors(self) -> bool: ...

    def has_snrs(self) -> bool: ...

    def device(self) -> ComputeDevice: ...

    def device_points_xyz(self, stream: Stream | None = None) -> DeviceArray:
        """
        A new PointXYZ array. With `stream`: enqueued there, non-blocking; without: on the device's own queue, blocking.
        """

    def device_points_xyzw(self, stream: Stream | None = None) -> DeviceArray: ...

    def device_points_z(self, stream: Stream | None = None) -> DeviceArray: ...

    def device_snrs(self, stream: Stream | None = None) -> DeviceArray: ...

    def device_normals_xyz(self, stream: Stream | None = None) -> DeviceArray: ...

    def image_device_array(self, format: Format, stream: Stream | None = None) -> DeviceArray:
        """The colours as a new array of colour format `format`."""

    def downsample(self, downsampling: Downsampling, stream: Stream | None = None) -> None: ...

    def downsampled(self, downsampling: Downsampling, stream: Stream | None = None) -> PointCloud: ...

    def transform(self, matrix: object, stream: Stream | None = None) -> None:
        """Applies a 4x4 row-major rigid transform in place."""

    def transformed(self, matrix: object, stream: Stream | None = None) -> PointCloud: ...

    def transformation_matrix(self) -> object:
        """The accumulated 4x4 transform (numpy float32)."""

    @overload
    def mask(self, mask: GpuMatND, stream: Stream | None = None) -> None:
        """Points where the (H, W) uint8 mask is 0 become NaN."""

    @overload
    def mask(self, mask: object) -> None:
        """Host mask: an (H, W) uint8 or bool numpy array."""

    @overload
    def masked(self, mask: GpuMatND, stream: Stream | None = None) -> PointCloud: ...

    @overload
    def masked(self, mask: object) -> PointCloud: ...

    def mask_by_region_of_interest(self, box: RegionOfInterestBox, stream: Stream | None = None) -> None: ...

    def masked_by_region_of_interest(self, box: RegionOfInterestBox, stream: Stream | None = None) -> PointCloud: ...

    def to_unorganized_point_cloud(self, stream: Stream | None = None) -> UnorganizedPointCloud:
        """Order-preserving compaction of the valid points."""

class UnorganizedPointCloud:
    """N valid points: XYZ, optional colour and SNR."""

    @overload
    def __init__(self) -> None: ...

    @overload
    def __init__(self, xyz: DeviceArray, colors: DeviceArray | None = None, snrs: DeviceArray | None = None) -> None: ...

    def size(self) -> int: ...

    def is_empty(self) -> bool: ...

    def has_colors(self) -> bool: ...

    def has_snrs(self) -> bool: ...

    def device(self) -> ComputeDevice: ...

    def device_points_xyz(self, stream: Stream | None = None) -> DeviceArray: ...

    def device_points_xyzw(self, stream: Stream | None = None) -> DeviceArray: ...

    def device_snrs(self, stream: Stream | None = None) -> DeviceArray: ...

    def device_colors(self, format: Format, stream: Stream | None = None) -> DeviceArray: ...

    def voxel_downsampled(self, voxel_size: float, min_points_per_voxel: int, stream: Stream | None = None) -> UnorganizedPointCloud: ...

    def transform(self, matrix: object, stream: Stream | None = None) -> None: ...

    def transformed(self, matrix: object, stream: Stream | None = None) -> UnorganizedPointCloud: ...

    def transformation_matrix(self) -> object: ...

    def extend(self, other: UnorganizedPointCloud, stream: Stream | None = None) -> None: ...

    def paint_uniform_color(self, rgba: Sequence[int], stream: Stream | None = None) -> None:
        """Sets every colour to linear (r, g, b, a) in [0, 255]."""

    def centroid(self, stream: Stream | None = None) -> list[float]:
        """Mean of the points (x, y, z)."""

    def center(self, stream: Stream | None = None) -> None:
        """Translates the cloud so that its centroid is the origin."""

class Frame2D:
    """An H x W colour image on one device (stored as linear ColorRGBA)."""

    @overload
    def __init__(self) -> None: ...

    @overload
    def __init__(self, image: DeviceArray) -> None:
        """Zero-copy from an organized ColorRGBA DeviceArray."""

    def height(self) -> int: ...

    def width(self) -> int: ...

    def size(self) -> int: ...

    def is_empty(self) -> bool: ...

    def device(self) -> ComputeDevice: ...

    @overload
    def image_device_array(self, format: Format, stream: Stream | None = None) -> DeviceArray:
        """The image as a new array of colour format `format`."""

    @overload
    def image_device_array(self, dst: DeviceArray, stream: Stream | None = None) -> None:
        """Fills `dst` (an organized colour DeviceArray of this size)."""
