"""DLPack exchange cost: torch.from_dlpack(devicearray) vs torch.from_dlpack(torch
tensor), and the bare devicearray __dlpack__ call, in microseconds per call.

    python bench/python_dlpack_bench.py [--iterations N]
"""

import argparse
import statistics
import time

import numpy as np

import devicearray as da


def time_us(fn, iterations, repeats=5):
    for _ in range(min(iterations, 1000)):
        fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        samples.append((time.perf_counter() - start) * 1e6 / iterations)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--iterations", type=int, default=20000)
    args = parser.parse_args()

    device = da.ComputeDevice.default_device()
    arr = da.from_numpy(np.zeros((480, 640, 3), np.float32), format=da.Format.PointXYZ, device=device)
    rows = [
        ("arr.__dlpack__(max_version=(1, 0))", lambda: arr.__dlpack__(max_version=(1, 0))),
        ("arr.__dlpack__() (legacy)", lambda: arr.__dlpack__()),
        ("da.from_dlpack(arr)", lambda: da.from_dlpack(arr)),
    ]
    try:
        import torch

        if device.backend() == da.ComputeBackend.cuda and torch.cuda.is_available():
            tensor = torch.zeros((480, 640, 3), dtype=torch.float32, device=f"cuda:{device.ordinal()}")
            rows += [
                ("torch.from_dlpack(devicearray)", lambda: torch.from_dlpack(arr)),
                ("torch.from_dlpack(torch tensor)", lambda: torch.from_dlpack(tensor)),
                ("da.from_dlpack(torch tensor)", lambda: da.from_dlpack(tensor)),
            ]
        else:
            print("(torch rows skipped: needs a CUDA device and torch with CUDA)")
    except ImportError:
        print("(torch rows skipped: torch is not installed)")

    print(f"device: {device}")
    print(f"{'operation':<40} {'us/call':>10}")
    print("-" * 51)
    for name, fn in rows:
        print(f"{name:<40} {time_us(fn, args.iterations):>10.2f}")


if __name__ == "__main__":
    main()
