"""DLPack exchange cost, in microseconds per call: the bare devicearray __dlpack__
call, devicearray.from_dlpack through the DLPack C exchange API (our arrays publish
one as __dlpack_c_exchange_api__, and so does PyTorch >= 2.11) and through a capsule,
and torch.from_dlpack(devicearray) vs torch.from_dlpack(torch tensor). Without torch
(or without CUDA) the torch rows are skipped.

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
    own_stream = 1 if device.native_stream_handle() == 0 else device.native_stream_handle()
    stream = own_stream if device.backend() == da.ComputeBackend.cuda else None
    rows = [
        ("arr.__dlpack__(max_version=(1, 0))", lambda: arr.__dlpack__(max_version=(1, 0))),
        ("arr.__dlpack__() (legacy)", lambda: arr.__dlpack__()),
        ("arr.__dlpack__(stream=own, max_version)",
         lambda: arr.__dlpack__(stream=stream, max_version=(1, 3))),
        ("da.from_dlpack(arr) (C exchange API)", lambda: da.from_dlpack(arr)),
        ("da.from_dlpack(arr.__dlpack__()) (capsule)", lambda: da.from_dlpack(arr.__dlpack__(max_version=(1, 3)))),
    ]
    try:
        import torch

        if device.backend() == da.ComputeBackend.cuda and torch.cuda.is_available():
            tensor = torch.zeros((480, 640, 3), dtype=torch.float32, device=f"cuda:{device.ordinal()}")
            path = "C exchange API" if hasattr(torch.Tensor, "__dlpack_c_exchange_api__") else "__dlpack__"
            rows += [
                ("torch.from_dlpack(devicearray)", lambda: torch.from_dlpack(arr)),
                ("torch.from_dlpack(torch tensor)", lambda: torch.from_dlpack(tensor)),
                (f"da.from_dlpack(torch tensor) ({path})", lambda: da.from_dlpack(tensor)),
                ("da.from_dlpack(torch capsule) (__dlpack__)",
                 lambda: da.from_dlpack(tensor.__dlpack__(stream=own_stream, max_version=(1, 0)))),
            ]
        else:
            print("(torch rows skipped: needs a CUDA device and torch with CUDA)")
    except ImportError:
        print("(torch rows skipped: torch is not installed)")

    print(f"device: {device}")
    print(f"{'operation':<48} {'us/call':>10}")
    print("-" * 59)
    for name, fn in rows:
        print(f"{name:<48} {time_us(fn, args.iterations):>10.2f}")


if __name__ == "__main__":
    main()
