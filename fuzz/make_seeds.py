#!/usr/bin/env python3
"""Writes the hand-made seed inputs of fuzz/corpus/ (run from anywhere).

The DLPack and layout targets read their inputs sequentially and little-endian
(fuzz_common.hpp: ByteReader), so each seed below is a readable description of
one tensor or layout. The file readers' seeds are copied from tests/data/ply, pcd,
xyz (the malformed-file corpora) and tests/data/exchange (files as other tools write
them), plus small valid PLY files written here.
"""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    with open(os.path.join(CORPUS, target, name), "wb") as f:
        f.write(data)


# ---- dlpack_import -------------------------------------------------------
KDL_INT, KDL_UINT, KDL_FLOAT = 0, 1, 2


def dlpack(mode, shape, strides, code=KDL_UINT, bits=8, lanes=1, major=1, minor=1, flags=0,
           device_sel=0, device_id=0, data_sel=0, byte_offset=0, ndim=None):
    ndim = len(shape) if ndim is None else ndim
    b = struct.pack("<BBBQb", mode, major, minor, flags, ndim)
    b += struct.pack("<BBH", code, bits, lanes)
    b += struct.pack("<B", device_sel)
    b += struct.pack("<i", device_id)
    b += struct.pack("<B", data_sel)
    b += struct.pack("<Q", byte_offset)
    b += b"".join(struct.pack("<q", s) for s in shape)
    if strides is not None:
        b += b"".join(struct.pack("<q", s) for s in strides)
    return b


NULL_STRIDES = 32
write("dlpack_import", "u8_2d_compact", dlpack(0, [16, 32], [32, 1]))
write("dlpack_import", "u8_2d_null_strides", dlpack(NULL_STRIDES, [16, 32], None))
write("dlpack_import", "f32_3d_padded", dlpack(0, [4, 8, 3], [40, 4, 1], code=KDL_FLOAT, bits=32, byte_offset=64))
write("dlpack_import", "legacy_s16", dlpack(1, [10, 10], [12, 1], code=KDL_INT, bits=16))
write("dlpack_import", "pointxyz_format", dlpack(2 | (0 << 2), [4, 5, 3], [15, 3, 1], code=KDL_FLOAT, bits=32))
write("dlpack_import", "rgba_format", dlpack(2 | (1 << 2), [8, 8, 4], [32, 4, 1]))
write("dlpack_import", "small_buffer_overrun", dlpack(0, [65], [1], data_sel=1))
write("dlpack_import", "offset_overflow", dlpack(0, [4], [1], byte_offset=(1 << 64) - 2))
write("dlpack_import", "huge_stride", dlpack(0, [2, 2], [(1 << 62), 1], code=KDL_FLOAT, bits=64))
write("dlpack_import", "negative_shape", dlpack(0, [-3, 4], [4, 1]))
write("dlpack_import", "newer_major", dlpack(0, [4], [1], major=2))
write("dlpack_import", "read_only", dlpack(0, [4], [1], flags=1))
write("dlpack_import", "cuda_device", dlpack(0, [4], [1], device_sel=4, data_sel=3) + struct.pack("<Q", 0xDEADBEEF))
write("dlpack_import", "cpu_device", dlpack(0, [4], [1], device_sel=5))
write("dlpack_import", "lanes4", dlpack(0, [4], [1], lanes=4))
write("dlpack_import", "ndim33", dlpack(NULL_STRIDES, [1] * 33, None))
write("dlpack_import", "explicit_device_f16", dlpack(16, [3, 7], [8, 1], code=KDL_FLOAT, bits=16))

# ---- gpumatnd_layout -----------------------------------------------------
def layout(mode, shape, depth, channels, steps, offset, ops=b""):
    b = struct.pack("<BB", mode, len(shape))
    b += bytes(s & 0xFF for s in shape)  # smallInt: bytes < 200 map to b % 9 - 1
    b += struct.pack("<BB", depth, channels - 1)
    b += struct.pack("<B", len(steps)) + bytes(steps)
    b += struct.pack("<H", offset)
    return b + ops


# shape bytes: value v in 1..7 is byte v + 1 (b % 9 - 1)
write("gpumatnd_layout", "external_3d", layout(0, [3 + 1, 4 + 1, 5 + 1], 0, 1, [], 16,
                                               bytes([0, 0, 1, 3, 2, 2, 7, 1, 3])))
write("gpumatnd_layout", "external_padded", layout(0, [4 + 1, 6 + 1], 2, 1, [16], 2, bytes([2, 0, 1, 0, 2])))
write("gpumatnd_layout", "owning_views", layout(1, [2 + 1, 3 + 1, 4 + 1], 5, 2, [], 0,
                                                bytes([0, 0, 1, 2, 1, 3, 0, 4, 1, 4, 5, 2, 3])))
write("gpumatnd_layout", "cuda_refused", layout(2, [2, 2], 0, 1, [], 64))
write("gpumatnd_layout", "hostmat_views", layout(3, [4 + 1, 4 + 1], 0, 3, [24], 0, bytes([1, 2, 1, 3, 1, 4])))
write("gpumatnd_layout", "bad_steps", layout(0, [3 + 1, 3 + 1], 5, 1, [5, 4], 0))

# ---- file readers: the test corpora ----------------------------------------
# Each reader's malformed-file corpus (tests/data/<format>/) and the files other
# tools write (tests/data/exchange/, by make_exchange_files.py) seed its target.


def copy_seeds(target, directory, extension):
    src = os.path.join(HERE, "..", "tests", "data", directory)
    if not os.path.isdir(src):
        return
    os.makedirs(os.path.join(CORPUS, target), exist_ok=True)
    for name in sorted(os.listdir(src)):
        if name.endswith(extension):
            shutil.copyfile(os.path.join(src, name), os.path.join(CORPUS, target, name))


for target, extension in (("ply_reader", ".ply"), ("pcd_reader", ".pcd"), ("xyz_reader", ".xyz")):
    copy_seeds(target, extension[1:], extension)
    copy_seeds(target, "exchange", extension)

# ---- ply_reader ----------------------------------------------------------

ascii_cloud = b"""ply
format ascii 1.0
obj_info height 2
obj_info width 2
element vertex 4
property float x
property float y
property float z
property uchar red
property uchar green
property uchar blue
property float snr
end_header
0 0 1 255 0 0 3.5
1 0 1 0 255 0 2
nan nan nan 0 0 255 0
1 1 1.5 10 20 30 1
"""
write("ply_reader", "valid_ascii_organized.ply", ascii_cloud)
header = (b"ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty float x\nproperty float y\n"
          b"property float z\nproperty float nx\nproperty float ny\nproperty float nz\n"
          b"element face 1\nproperty list uchar int vertex_indices\nend_header\n")
body = struct.pack("<6f", 1, 2, 3, 0, 0, 1) + struct.pack("<6f", 4, 5, 6, 0, 1, 0)
body += struct.pack("<B3i", 3, 0, 1, 1)
write("ply_reader", "valid_binary_normals_face.ply", header + body)
header_be = (b"ply\nformat binary_big_endian 1.0\nelement vertex 1\nproperty double x\nproperty double y\n"
             b"property double z\nproperty ushort red\nproperty ushort green\nproperty ushort blue\nend_header\n")
write("ply_reader", "valid_binary_be_double.ply", header_be + struct.pack(">3d3H", 1.5, -2, 3, 65535, 0, 300))
