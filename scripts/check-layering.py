#!/usr/bin/env python3
"""Checks the include layering of the tree; prints each violation as FILE:LINE and
exits 1 if there is any.

  src/backend/                the backend interface: nothing of ours above it
  src/cuda/, src/opencl/      implement it (with src/kernels/)
  src/core/                   uses the interface, never a backend or a kernel body
  src/pointcloud/, src/interop/, src/io/   use core and the interface, never a backend
  python/src/, tools/         use only the public headers (include/devicearray/)

EXCEPTIONS lists the few single headers a layer may include across these rules.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')

# directory -> (prefixes it must not include, why)
RULES = {
    "src/backend": (("core/", "cuda/", "opencl/", "pointcloud/", "interop/", "io/"),
                    "the backend interface depends on nothing of ours above it"),
    "src/core": (("cuda/", "opencl/", "kernels/"), "core uses the backend interface, not a backend or kernel body"),
    "src/pointcloud": (("cuda/", "opencl/", "kernels/"), "point clouds use the backend interface only"),
    "src/interop": (("cuda/", "opencl/", "kernels/"), "interop reaches the toolkits only through the backend"),
    "src/io": (("cuda/", "opencl/", "kernels/", "backend/"), "files use the public API and core only"),
}
# Includes allowed although their directory is banned: (directory, header) -> why.
EXCEPTIONS = {
    ("src/io", "backend/checked_math.hpp"): "the one checked multiply; it needs nothing but the public errors",
    ("src/core", "kernels/saturate.h"): "the host converts fill values with the kernels' saturate_cast",
}
PUBLIC_ONLY = ("python/src", "tools")


def violations():
    for directory, (banned, why) in RULES.items():
        for path in sorted((ROOT / directory).rglob("*")):
            if path.suffix not in (".cpp", ".hpp", ".h", ".cu", ".cuh"):
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if m and m.group(1).startswith(banned) and (directory, m.group(1)) not in EXCEPTIONS:
                    yield f"{path.relative_to(ROOT)}:{number}: includes \"{m.group(1)}\" ({why})"
    for directory in PUBLIC_ONLY:
        for path in sorted((ROOT / directory).rglob("*")):
            if path.suffix not in (".cpp", ".hpp", ".h"):
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                target = m.group(1)
                local = (path.parent / target).is_file()
                if not local and not target.startswith("devicearray/"):
                    yield (f"{path.relative_to(ROOT)}:{number}: includes \"{target}\" "
                           f"({directory}/ uses only the public headers, include/devicearray/)")


def main():
    found = list(violations())
    for v in found:
        print(v)
    if found:
        print(f"check-layering: {len(found)} include(s) across the layers", file=sys.stderr)
        return 1
    print("check-layering: no include crosses the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
