"""Hand a colour image on the device to CuPy without a copy.

A Frame2D keeps its image as the 8-bit codes it was given (here linear ColorRGBA);
image_device_array(format) converts it on the device into a new array of any colour
format. cupy.asarray(arr) reads __cuda_array_interface__ and cupy.from_dlpack(arr) the
DLPack protocol: both share the device memory.

Run: PYTHONPATH=<build>/python python3 examples/python/color_image_to_cupy.py
"""

import sys

import numpy as np

import devicearray as da


def main() -> int:
    try:
        import cupy
    except ImportError:
        print("skipped: CuPy is not installed")
        return 0
    cuda = [d for d in da.ComputeDevice.all() if d.backend() == da.ComputeBackend.cuda]
    if not cuda:
        print("skipped: no CUDA device for devicearray")
        return 0
    device = cuda[0]

    # A 2 x 3 linear RGBA image: red, green, blue, white, black, half-transparent red.
    rgba = np.array(
        [[[255, 0, 0, 255], [0, 255, 0, 255], [0, 0, 255, 255]],
         [[255, 255, 255, 255], [0, 0, 0, 255], [255, 0, 0, 128]]],
        dtype=np.uint8,
    )
    frame = da.Frame2D(da.from_numpy(rgba, format=da.Format.ColorRGBA, device=device))

    # OpenCV's channel order, sRGB-encoded (0 and 255 are fixed points of the curve).
    bgr = frame.image_device_array(da.Format.ColorBGR_SRGB)

    with cupy.cuda.Device(device.ordinal()):
        image = cupy.asarray(bgr)  # zero-copy through __cuda_array_interface__
        assert image.data.ptr == bgr.device_pointer()
        assert image.shape == (2, 3, 3) and image.dtype == cupy.uint8
        np.testing.assert_array_equal(cupy.asnumpy(image), rgba[..., 2::-1])

        same = cupy.from_dlpack(bgr)  # the same memory through DLPack
        assert same.data.ptr == bgr.device_pointer()

        # CuPy computes on the image in place; devicearray sees the result once
        # CuPy's stream has run it.
        image[...] = 255 - image
        cupy.cuda.get_current_stream().synchronize()
    np.testing.assert_array_equal(bgr.to_numpy(), 255 - rgba[..., 2::-1])

    print(f"{device}: cupy image {image.shape} shares devicearray's memory; ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
