#!/usr/bin/env python3
"""Writes the committed point-cloud files in tests/data/exchange/: files laid out the
way PCL, Open3D, trimesh, plyfile, pymeshlab, CloudCompare and camera vendors write
them, built byte by byte here (none of those tools is needed). tests/exchange_files_test.cpp
states what each must read as, and fuzz/ seeds its PCD and XYZ targets from them.

  python3 tests/data/exchange/make_exchange_files.py      (rewrites the files in place)

Only the Python standard library is used. The LZF compressor below is a separate,
simple implementation, so the reader's decoder is checked against data it did not make.
"""
import math
import pathlib
import struct

OUT = pathlib.Path(__file__).resolve().parent
NAN = float("nan")

# A 3 x 4 organized grid: point (r, c) at x = c, y = r, z = 100 + 10 r + c; two holes.
ROWS, COLS = 3, 4
HOLES = {(0, 1), (2, 3)}


def grid():
    for r in range(ROWS):
        for c in range(COLS):
            hole = (r, c) in HOLES
            xyz = (NAN, NAN, NAN) if hole else (float(c), float(r), 100.0 + 10 * r + c)
            rgb = (10 * c + 5, 20 * r + 7, 200 - c - r)
            yield xyz, rgb


def write(name, data):
    (OUT / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def lzf_compress(data):
    """Greedy LZF: literal runs of up to 32 bytes, back references found through a
    dictionary of the last position of each 3-byte prefix."""
    out = bytearray()
    last = {}
    literal = bytearray()
    i = 0

    def flush():
        nonlocal literal
        while literal:
            chunk = literal[:32]
            out.append(len(chunk) - 1)
            out.extend(chunk)
            literal = literal[32:]

    while i < len(data):
        key = bytes(data[i:i + 3])
        ref = last.get(key) if len(key) == 3 else None
        if len(key) == 3:
            last[key] = i
        if ref is not None and i - ref <= 8192:
            length = 3
            while length < 264 and i + length < len(data) and data[ref + length] == data[i + length]:
                length += 1
            flush()
            code, off = length - 2, i - ref - 1
            if code < 7:
                out.append((code << 5) | (off >> 8))
            else:
                out.append((7 << 5) | (off >> 8))
                out.append(code - 7)
            out.append(off & 0xFF)
            i += length
            continue
        literal.append(data[i])
        i += 1
    flush()
    return bytes(out)


def pcd_header(fields, sizes, types, counts, width, height, data):
    return ("# .PCD v0.7 - Point Cloud Data file format\nVERSION 0.7\n"
            f"FIELDS {' '.join(fields)}\nSIZE {' '.join(map(str, sizes))}\nTYPE {' '.join(types)}\n"
            f"COUNT {' '.join(map(str, counts))}\nWIDTH {width}\nHEIGHT {height}\n"
            f"VIEWPOINT 0 0 0 1 0 0 0\nPOINTS {width * height}\nDATA {data}\n")


def packed(rgb, alpha=255):
    r, g, b = rgb
    return (alpha << 24) | (r << 16) | (g << 8) | b


def pcl_organized_binary():
    """PCL's PointXYZRGBA organized cloud: x y z, a 4-byte '_' padding field, rgba."""
    header = pcd_header(["x", "y", "z", "_", "rgba"], [4, 4, 4, 1, 4], ["F", "F", "F", "U", "U"], [1, 1, 1, 4, 1],
                        COLS, ROWS, "binary")
    body = b"".join(struct.pack("<fff4xI", *xyz, packed(rgb)) for xyz, rgb in grid())
    write("pcl_organized_xyzrgba_binary.pcd", header.encode() + body)


def pcl_normals_compressed():
    """PCL's PointXYZRGBNormal, unorganized, binary_compressed: x y z rgb (float bits)
    normal_x normal_y normal_z curvature, each field stored for all points in turn."""
    points = [(xyz, rgb) for xyz, rgb in grid() if not math.isnan(xyz[0])]
    n = len(points)
    fields = ["x", "y", "z", "rgb", "normal_x", "normal_y", "normal_z", "curvature"]
    columns = [
        [struct.pack("<f", p[0][0]) for p in points],
        [struct.pack("<f", p[0][1]) for p in points],
        [struct.pack("<f", p[0][2]) for p in points],
        [struct.pack("<I", packed(p[1], 0)) for p in points],  # PCL's rgb: top byte 0
        [struct.pack("<f", 0.0) for _ in points],
        [struct.pack("<f", 0.6) for _ in points],
        [struct.pack("<f", -0.8) for _ in points],
        [struct.pack("<f", 0.01 * i) for i in range(n)],
    ]
    raw = b"".join(b"".join(col) for col in columns)
    compressed = lzf_compress(raw)
    header = pcd_header(fields, [4] * 8, ["F"] * 8, [1] * 8, n, 1, "binary_compressed")
    write("pcl_xyzrgbnormal_binary_compressed.pcd",
          header.encode() + struct.pack("<II", len(compressed), len(raw)) + compressed)


def pcl_ascii_intensity():
    """An older ascii PCD: rgb as the float with the packed bits, intensity, and an
    unknown field with COUNT 3; no VIEWPOINT or POINTS lines (version 0.6 style)."""
    lines = ["# .PCD v.6 - Point Cloud Data file format", "VERSION .6",
             "FIELDS x y z rgb intensity extra", "SIZE 4 4 4 4 4 2", "TYPE F F F F F I", "COUNT 1 1 1 1 1 3",
             "WIDTH 3", "HEIGHT 1", "DATA ascii"]
    pts = [((1.5, -2.0, 300.0), (255, 0, 0)), ((0.0, 0.0, 1e-50), (1, 2, 3)), ((-4.0, 5.0, 6.0), (0, 128, 255))]
    for xyz, rgb in pts:
        bits = struct.unpack("<f", struct.pack("<I", packed(rgb, 0)))[0]
        lines.append(f"{xyz[0]} {xyz[1]} {xyz[2]} {bits!r} 0.5 1 -2 3")
    write("pcl_ascii_rgb_float_intensity.pcd", "\n".join(lines) + "\n")


def pcl_ply_camera():
    """PCL's PLYWriter with a camera element: the grid is viewportx x viewporty."""
    header = ("ply\nformat binary_little_endian 1.0\ncomment PCL generated\n"
              f"element vertex {ROWS * COLS}\nproperty float x\nproperty float y\nproperty float z\n"
              "property uchar red\nproperty uchar green\nproperty uchar blue\nproperty uchar alpha\n"
              "property float normal_x\nproperty float normal_y\nproperty float normal_z\nproperty float curvature\n"
              "element camera 1\nproperty float view_px\nproperty float view_py\nproperty float view_pz\n"
              "property float x_axisx\nproperty float x_axisy\nproperty float x_axisz\n"
              "property float y_axisx\nproperty float y_axisy\nproperty float y_axisz\n"
              "property float z_axisx\nproperty float z_axisy\nproperty float z_axisz\n"
              "property float focal\nproperty float scalex\nproperty float scaley\nproperty float centerx\n"
              "property float centery\nproperty int viewportx\nproperty int viewporty\nproperty float k1\n"
              "property float k2\nend_header\n")
    body = b"".join(struct.pack("<fffBBBBffff", *xyz, *rgb, 255, 0.0, 0.0, -1.0, 0.0) for xyz, rgb in grid())
    camera = struct.pack("<15f", 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0) + struct.pack("<2f", 0, 0)
    camera += struct.pack("<ii", COLS, ROWS) + struct.pack("<2f", 0, 0)
    write("pcl_camera_organized.ply", header.encode() + body + camera)


def vendor_ply_num_rows():
    """obj_info num_cols / num_rows (VTK, PCL without a camera, camera vendors), ascii,
    with a comment that mentions a height that is not the grid's."""
    header = ("ply\nformat ascii 1.0\ncomment height 99\ncomment width of the sensor: 1280\n"
              f"obj_info num_cols {COLS}\nobj_info num_rows {ROWS}\n"
              f"element vertex {ROWS * COLS}\nproperty float x\nproperty float y\nproperty float z\nend_header\n")
    body = "".join(f"{x} {y} {z}\n".replace("nan", "nan") for (x, y, z), _ in grid())
    write("vendor_num_rows_organized.ply", header + body)


def open3d_ply():
    """Open3D's write_point_cloud: double x y z, double nx ny nz, uchar red green blue."""
    pts = [((0.25, -1.5, 1000.125), (0.0, 0.0, 1.0), (255, 128, 0)), ((1e-50, 2.0, 3.0), (1.0, 0.0, 0.0), (1, 2, 3))]
    header = ("ply\nformat binary_little_endian 1.0\ncomment Created by Open3D\nelement vertex 2\n"
              "property double x\nproperty double y\nproperty double z\n"
              "property double nx\nproperty double ny\nproperty double nz\n"
              "property uchar red\nproperty uchar green\nproperty uchar blue\nend_header\n")
    body = b"".join(struct.pack("<6d3B", *p, *n, *c) for p, n, c in pts)
    write("open3d_double_normals.ply", header.encode() + body)


def trimesh_ply():
    """trimesh's PointCloud export: float x y z, uchar red green blue alpha, and an
    empty face element; then a few trailing bytes."""
    header = ("ply\nformat binary_little_endian 1.0\ncomment https://github.com/mikedh/trimesh\n"
              "element vertex 2\nproperty float x\nproperty float y\nproperty float z\n"
              "property uchar red\nproperty uchar green\nproperty uchar blue\nproperty uchar alpha\n"
              "element face 0\nproperty list uchar int vertex_indices\nend_header\n")
    body = struct.pack("<3f4B", 1, 2, 3, 10, 20, 30, 128) + struct.pack("<3f4B", 4, 5, 6, 40, 50, 60, 255)
    write("trimesh_rgba_trailing.ply", header.encode() + body + b"\n\x00\x00")


def pymeshlab_ply():
    """pymeshlab's save_current_mesh: ascii, float normals, float quality, and colours
    as floats in 0..255 (written by scripts that scale them themselves)."""
    write("pymeshlab_float_colors_255.ply",
          "ply\nformat ascii 1.0\ncomment VCGLIB generated\nelement vertex 2\n"
          "property float x\nproperty float y\nproperty float z\nproperty float nx\nproperty float ny\n"
          "property float nz\nproperty float red\nproperty float green\nproperty float blue\n"
          "property float quality\nelement face 0\nproperty list uchar int vertex_indices\nend_header\n"
          "1 2 3 0 0 1 200 100.5 0 0.5\n4 5 6 0 1 0 1 0.5 255 0.25\n")


def aliases_ply():
    """Colour names other tools use: diffuse_red/green/blue (old Blender and MeshLab
    files) and r/g/b; integer coordinates; an alpha without colours."""
    write("diffuse_colors_int_xyz.ply",
          "ply\nformat ascii 1.0\nelement vertex 2\nproperty int x\nproperty short y\nproperty uint z\n"
          "property uchar diffuse_red\nproperty uchar diffuse_green\nproperty uchar diffuse_blue\nend_header\n"
          "-7 8 9 1 2 3\n10 -11 12 4 5 6\n")
    write("rgb_short_names.ply",
          "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
          "property float r\nproperty float g\nproperty float b\nend_header\n1 2 3 1.0 0.5 0\n")
    write("alpha_only.ply",
          "ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\n"
          "property uchar alpha\nend_header\n1 2 3 7\n")


def xyz_files():
    """CloudCompare's ascii export (integer colours) and Open3D's xyzrgb layout (float
    colours in 0..1), plus a plain x y z file with comments and blank lines."""
    write("cloudcompare_rgb.xyz", "1.5 -2 3 255 128 0\n4 5 6 1 2 3\n")
    write("open3d_rgb_normals.xyz", "1 2 3 1.0 0.5 0.0 0 0 1\n4 5 6 0 0 1 1 0 0\n")
    write("plain.xyz", "# x y z\n\n1 2 3\n-4e2 5.5 nan\n\n7 8 9\n")


def main():
    pcl_organized_binary()
    pcl_normals_compressed()
    pcl_ascii_intensity()
    pcl_ply_camera()
    vendor_ply_num_rows()
    open3d_ply()
    trimesh_ply()
    pymeshlab_ply()
    aliases_ply()
    xyz_files()


if __name__ == "__main__":
    main()
