"""bench/compare.py's parsing, target checks and report, on canned Google Benchmark
JSON whose expected ratios are worked out by hand below (no device, no peers)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("da_compare", ROOT / "bench" / "compare.py")
compare = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = compare  # dataclasses look their module up while it executes
_spec.loader.exec_module(compare)

GIB = 1 << 30
LARGE = 1 << 26
FRAME = 1920 * 1200


def entry(name, real_time, unit="ns", bps=None, run_type="iteration", **extra):
    e = {"name": name, "run_name": name, "run_type": run_type, "iterations": 100, "real_time": real_time,
         "cpu_time": real_time, "time_unit": unit}
    if bps is not None:
        e["bytes_per_second"] = bps
    e.update(extra)
    return e


def canned_docs():
    """Two documents as core_bench and convert/pointcloud/dlpack_bench write them."""
    core = {
        "context": {"host_name": "h200-box", "num_cpus": 16, "library_build_type": "release"},
        "benchmarks": [
            entry("allocate/cuda0/1024", 1700), entry("allocate/cuda0/1048576", 1640),
            entry("allocate/cuda0/268435456", 1690),
            entry("clone_continuous/cuda0/1048576/manual_time", 12366, bps=169.6e9),
            entry(f"clone_continuous/cuda0/{GIB}/manual_time", 513000, bps=4186.5e9),
            entry(f"clone_xyz_of_xyzw/cuda0/{GIB}/manual_time", 575000, bps=2800.9e9),
            entry(f"clone_roi/cuda0/{GIB}/manual_time", 133000, bps=4041.9e9),
            entry(f"upload_pinned/cuda0/{GIB}/manual_time", 19380000, bps=55.4e9),
            entry(f"download_pinned/cuda0/{GIB}/manual_time", 19400000, bps=55.3e9),
            entry(f"upload_pageable/cuda0/{GIB}/manual_time", 132000000, bps=8.1e9),
            entry(f"download_pageable/cuda0/{GIB}/manual_time", 78000000, bps=13.7e9),
            # Another device of the same run: ignored when cuda0 is reported.
            entry(f"clone_continuous/opencl1/{GIB}/manual_time", 600000, bps=3500e9),
            entry("baseline_cudaMemcpyAsync_d2d/cuda0/1048576/manual_time", 6400, bps=327.4e9),
            entry(f"baseline_cudaMemcpyAsync_d2d/cuda0/{GIB}/manual_time", 514000, bps=4176.0e9),
            entry(f"baseline_cudaMemcpyAsync_h2d_pinned/cuda0/{GIB}/manual_time", 19380000, bps=55.4e9),
            entry(f"baseline_cudaMemcpyAsync_d2h_pinned/cuda0/{GIB}/manual_time", 19400000, bps=55.3e9),
            entry(f"baseline_cudaMemcpy_h2d_pageable/cuda0/{GIB}/manual_time", 53600000, bps=20.0e9),
            entry(f"baseline_cudaMemcpy_d2h_pageable/cuda0/{GIB}/manual_time", 76600000, bps=14.0e9),
            entry("baseline_cudaMallocAsync_pair/cuda0/1024", 670),
        ],
    }
    other = {
        "context": {},
        "benchmarks": [
            entry(f"convert_XYZW_to_XYZW/cuda0/{LARGE}/manual_time", 511000, bps=4.2e12),
            entry(f"convert_XYZ_to_Z/cuda0/{LARGE}/manual_time", 245000, bps=4.38e12),
            entry(f"convert_XYZ_to_XYZW/cuda0/{LARGE}/manual_time", 944000, bps=1.99e12),
            entry(f"convert_XYZ_to_XYZW/cuda0/{FRAME}/manual_time", 30000, bps=2.15e12),
            entry(f"convert_alloc_XYZ_to_XYZW/cuda0/{FRAME}/manual_time", 22.5, unit="us", bps=2.9e12,
                  device_us=18.0, elements=FRAME),
            entry(f"convert_RGB_to_BGRA/cuda0/{FRAME}/manual_time", 0, error_occurred=True,
                  error_message="out of memory"),
            entry("pc_pipeline/cuda0/manual_time", 850, unit="us", host_us=870.0, points_in=FRAME, points_out=3315,
                  queued_us=300.0, enqueue_us=640.0),
            entry("pc_pipeline_graph/cuda0/manual_time", 170, unit="us", queued_us=165.0, enqueue_us=9.0),
            entry("baseline_kernel_launch/cuda0", 4.8, unit="us"),
            # Three repetitions plus their aggregates: the median aggregate is taken.
            entry("dlpack_export/cuda0", 3.0, unit="us", repetitions=3),
            entry("dlpack_export/cuda0", 9.0, unit="us", repetitions=3),
            entry("dlpack_export/cuda0", 4.0, unit="us", repetitions=3),
            entry("dlpack_export/cuda0_mean", 5.33, unit="us", run_type="aggregate", aggregate_name="mean"),
            entry("dlpack_export/cuda0_median", 4.0, unit="us", run_type="aggregate", aggregate_name="median"),
            # Repetitions without aggregates: the median of the iteration entries.
            entry("dlpack_import/cuda0", 30.0, unit="us"), entry("dlpack_import/cuda0", 10.0, unit="us"),
            entry("dlpack_import/cuda0", 20.0, unit="us"),
        ],
    }
    # Google Benchmark names aggregates "<run_name>_<aggregate>" but keeps run_name.
    for e in other["benchmarks"]:
        if e["run_type"] == "aggregate":
            e["run_name"] = "dlpack_export/cuda0"
    return [core, other]


def with_peers(m):
    """Peer figures as measure_torch would add them."""
    m.add(compare.Result("torch", "clone_xyz_of_xyzw", GIB, 1.0, 0.9e12))  # ours 2800.9 / 900 = 3.11
    m.add(compare.Result("torch", "clone_roi", GIB, 1.0, 1.5e12))  # ours 4041.9 / 1500 = 2.69
    m.add(compare.Result("torch", "convert_XYZ_to_XYZW", LARGE, 1.0, 0.9e12))  # 1990 / 900 = 2.21
    m.add(compare.Result("torch", "pc_pipeline", FRAME, 2.55e-3))  # ours 850 µs: 3.0x
    m.add(compare.Result("python", "pc_pipeline", FRAME, 0.2e-3))  # 12.75x
    return m


def by_target(verdicts):
    return {v.target: v for v in verdicts}


def test_split_name_strips_google_benchmark_suffixes():
    assert compare.split_name("clone_roi/cuda0/1048576/manual_time") == ("clone_roi", "cuda0", 1048576)
    assert compare.split_name("pc_pipeline/opencl0/manual_time") == ("pc_pipeline", "opencl0", None)
    assert compare.split_name("allocate/cuda1/1024/min_time:0.010/real_time") == ("allocate", "cuda1", 1024)
    assert compare.split_name("dlpack_export/cuda0") == ("dlpack_export", "cuda0", None)


def test_parse_takes_medians_converts_units_and_lists_errors():
    rows, errors = compare.parse_benchmark_json(canned_docs()[1])
    got = {(op, dev, arg): (sec, bps, counters) for op, dev, arg, sec, bps, counters in rows}
    assert got[("dlpack_export", "cuda0", None)][0] == pytest.approx(4.0e-6)
    assert got[("dlpack_import", "cuda0", None)][0] == pytest.approx(20.0e-6)
    sec, bps, counters = got[("convert_alloc_XYZ_to_XYZW", "cuda0", FRAME)]
    assert sec == pytest.approx(22.5e-6) and bps == pytest.approx(2.9e12)
    assert counters["device_us"] == 18.0 and counters["elements"] == FRAME
    assert ("convert_RGB_to_BGRA", "cuda0", FRAME) not in got
    assert errors == [f"convert_RGB_to_BGRA/cuda0/{FRAME}/manual_time: out of memory"]


def test_default_device_is_cuda0_and_baselines_attach_to_it():
    m = compare.load_results(canned_docs(), None)
    assert m.device == "cuda0"
    assert m.get("devicearray", "clone_continuous", GIB).bytes_per_second == pytest.approx(4186.5e9)
    assert m.get("cuda", "baseline_cudaMemcpyAsync_d2d", GIB).bytes_per_second == pytest.approx(4176.0e9)
    assert m.args("devicearray", "allocate") == [1024, 1 << 20, 1 << 28]


def test_targets_pass_and_miss_with_hand_computed_margins():
    v = by_target(compare.evaluate_targets(with_peers(compare.load_results(canned_docs(), None))))

    t = v["contiguous clone vs cudaMemcpyAsync D2D"]  # 4186.5 / 4176.0 = 1.0025, at the largest size
    assert t.ok is True and t.margin == "+5 pts" and t.measured.startswith("1.00×") and "1 GiB" in t.measured
    t = v["strided clone (XYZ of XYZW) vs contiguous clone"]  # 2800.9 / 4186.5 = 0.669
    assert t.ok is False and t.margin == "-3 pts" and t.bound
    assert v["strided clone (2-D ROI) vs contiguous clone"].ok is True  # 0.965
    t = v["strided clone (XYZ of XYZW) vs torch .contiguous()"]  # 3.11 >= 3
    assert t.ok is True and t.margin == "+4%"
    t = v["strided clone (2-D ROI) vs torch .contiguous()"]  # 2.69 / 3 - 1 = -10%
    assert t.ok is False and t.margin == "-10%"
    assert v["upload pinned vs cudaMemcpyAsync"].ok is True
    assert v["download pinned vs cudaMemcpyAsync"].ok is True
    t = v["upload pageable vs plain cudaMemcpy"]  # 8.1 / 20.0 = 0.405; 0.405 / 3 - 1 = -86%
    assert t.ok is False and t.margin == "-86%"
    t = v["pool allocation (allocate+release pair)"]  # worst of 1.70, 1.64, 1.69 µs against 1.5
    assert t.ok is False and t.measured.startswith("1.70 µs") and t.margin == "-0.20 µs"
    t = v["1920×1200 XYZ→XYZW incl. allocation (host, end to end)"]
    assert t.ok is True and t.margin == "+2.5 µs" and "device 18.0 µs" in t.measured
    t = v["XYZ→Z vs copy"]  # 4.38 / 4.2 = 1.04
    assert t.ok is True and "64M" in t.measured
    t = v["XYZ→XYZW vs copy"]  # 1.99 / 4.2 = 0.474
    assert t.ok is False and t.margin == "-33 pts"
    t = v["XYZ→XYZW vs torch expression"]  # 1.99 / 0.9 = 2.21; 2.21 / 2 - 1 = +11%
    assert t.ok is True and t.margin == "+11%"
    assert v["RGBA→BGR vs copy"].ok is None  # not measured in the canned run
    t = [x for x in v.values() if x.target.startswith("1920×1200 pipeline (")][0]
    # Judged on the device's own time: enqueued ahead of the device the same calls took
    # 300 µs (the 850 µs span waited for the host); the verdict says how long the host
    # took to enqueue them and what one launch costs it.
    assert t.ok is False and t.measured == "300 µs on the device (span 850 µs)" and t.margin == "-180 µs"
    assert t.bound == ("the kernels of unorganize and the voxel sort (the host enqueues them in 640 µs; one kernel "
                       "launch costs it 4.8 µs)")
    t = v["1920×1200 pipeline through C++ vs PyTorch"]  # 2550 / 850 = 3.0; 3.0 - 10 = -7.0
    assert t.ok is False and t.measured == "3.0×" and t.margin == "-7.0×"
    t = v["1920×1200 pipeline through Python API vs PyTorch"]  # 2550 / 200 = 12.75
    assert t.ok is True and t.measured == "12.8×" and t.margin == "+2.8×"
    t = v["1920×1200 pipeline through a CUDA graph of the C++ calls vs PyTorch"]  # 2550 / 170 = 15.0
    assert t.ok is True and t.measured == "15.0×" and t.margin == "+5.0×"


def frame_pipeline_docs():
    """A run with both camera sizes, another OpenCL device, frame-sized copies and
    pageable transfers at several sizes."""
    mib = 1 << 20
    rows = [
        entry(f"clone_continuous/cuda0/{GIB}/manual_time", 513000, bps=4000e9),  # the copy bandwidth: 4 TB/s
        entry("clone_continuous/cuda0/9216000/manual_time", 10, unit="us", bps=1843.2e9),
        entry("baseline_cudaMemcpyAsync_d2d/cuda0/9216000/manual_time", 9, unit="us", bps=2048e9),
        # queued: 6e7 B in 16 µs = 3.75e12 B/s on the device
        entry(f"convert_XYZW_to_XYZW/cuda0/{FRAME}/manual_time", 20, unit="us", bps=3.0e12, queued_us=16.0),
        entry(f"convert_XYZ_to_Z/cuda0/{FRAME}/manual_time", 10, unit="us", bps=2.4e12),
        # 1.6e7 B: queued 6 µs = 2.667e12 B/s (0.71 of the copy), 5 µs = 3.2e12 (0.85)
        entry(f"convert_RGB_to_BGRA/cuda0/{FRAME}/manual_time", 10, unit="us", bps=1.6e12, queued_us=6.0),
        entry(f"convert_RGBAf_to_RGBA_SRGB/cuda0/{FRAME}/manual_time", 8, unit="us", bps=2.0e12, queued_us=5.0),
        entry(f"pc_pipeline/cuda0/{FRAME}/manual_time", 100, unit="us", bytes=1e8),
        entry(f"pc_unorganize/cuda0/{FRAME}/manual_time", 25, unit="us"),
        entry(f"pc_voxel/cuda0/{FRAME}/manual_time", 40, unit="us"),
        entry(f"pc_pipeline/cuda0/{FIVE_MP}/manual_time", 250, unit="us"),
        entry(f"pc_pipeline_graph/cuda0/{FRAME}/manual_time", 130, unit="us", queued_us=125.0, enqueue_us=6.0),
        # bound = 8e7 B / 4e12 B/s = 20 µs: 20 / 50 = 40 % (miss); 2e7 B: 5 µs of 8 µs (small: pass)
        entry(f"pc_voxel/cuda0/{FIVE_MP}/manual_time", 50, unit="us", bytes=8e7),
        entry(f"pc_normals/cuda0/{FIVE_MP}/manual_time", 8, unit="us", bytes=2e7),
        entry(f"pc_pipeline/opencl0/{FRAME}/manual_time", 180, unit="us"),
        entry(f"pc_pipeline/opencl1/{FRAME}/manual_time", 9000, unit="us"),
        entry("upload_pageable/cuda0/4096/manual_time", 10, unit="us", bps=0.41e9),
        entry(f"upload_pageable/cuda0/{mib}/manual_time", 50, unit="us", bps=21e9),
        entry(f"upload_pageable/cuda0/{256 * mib}/manual_time", 10000, unit="us", bps=27e9),
        entry("baseline_cudaMemcpy_h2d_pageable/cuda0/4096/manual_time", 8, unit="us", bps=0.5e9),
        entry(f"baseline_cudaMemcpy_h2d_pageable/cuda0/{mib}/manual_time", 70, unit="us", bps=15e9),
        entry(f"baseline_cudaMemcpy_h2d_pageable/cuda0/{256 * mib}/manual_time", 20000, unit="us", bps=10e9),
    ]
    return [{"context": {}, "benchmarks": rows}]


FIVE_MP = 2448 * 2048


def test_frame_pipeline_targets_with_hand_computed_margins():
    m = compare.load_results(frame_pipeline_docs(), None)
    m.add(compare.Result("python", "transformed_stream_host", None, 4.0e-6))
    m.add(compare.Result("python", "transformed_blocking_host", None, 25.0e-6))
    m.add(compare.Result("python", "transformed_device", None, 10.0e-6))
    # 1000 frames/s of a bound min(55e9 / 46.08e6 = 1193.6, 1 / 100 µs = 10000) -> 83.8 %
    m.add(compare.Result("cli", "frames_per_second", FRAME, 1e-3,
                         counters={"frames_per_second": 1000.0, "frame_bytes": FRAME * 20.0}))
    m.add(compare.Result("cli", "frames_per_second_pinned", FRAME, 1e-3,
                         counters={"frames_per_second": 1100.0, "frame_bytes": FRAME * 20.0}))
    v = by_target(compare.frame_pipeline_targets(m))
    t = v["1920×1200 pipeline (downsample→normals→transform→ROI→unorganize→voxel)"]
    assert t.ok is True and t.measured == "100 µs" and t.margin == "+20 µs"
    t = v["2448×2048 pipeline (downsample→normals→transform→ROI→unorganize→voxel)"]
    assert t.ok is False and t.margin == "-50 µs"
    # The graph: 125 µs on the device (its span 130 µs) against 120.
    t = v["1920×1200 pipeline replayed as a CUDA graph"]
    assert t.ok is False and t.measured == "125 µs on the device (span 130 µs)" and t.margin == "-5 µs"
    assert t.bound == "the kernels' own time: the voxel sort over the compaction's capacity (the host enqueues them in 6 µs)"
    assert "2448×2048 pipeline replayed as a CUDA graph" not in v  # not measured: no row
    assert v["1920×1200 unorganize stage"].ok is False and v["1920×1200 unorganize stage"].margin == "-5 µs"
    assert v["1920×1200 voxel stage"].ok is True and v["1920×1200 voxel stage"].margin == "+10 µs"
    t = v["2448×2048 voxel vs its memory bound"]
    assert t.ok is False and t.measured == "50.0 µs, bound 20.0 µs (40%)" and t.margin == "-10 pts"
    t = v["2448×2048 normals vs its memory bound"]  # 5 / 8 = 62 %, and under 10 µs anyway
    assert t.ok is True and t.measured.endswith("(62%)")
    assert v["2448×2048 roi vs its memory bound"].ok is None  # not measured
    t = v["1920×1200 pipeline on the fastest OpenCL device vs CUDA"]  # opencl0: 180 / 100, no queued times
    assert t.ok is True and t.measured == "1.80× (opencl0 180 µs; event spans)" and t.margin == "+0.20×"
    t = v["9.2 MB clone vs cudaMemcpyAsync D2D"]  # 1843.2 / 2048 = 0.90
    assert t.ok is True and t.margin == "+0 pts"
    t = v["XYZ→Z at 1920×1200 vs copy"]  # no queued time: the spans, 2.4 / 3.0 = 0.80
    assert t.ok is True and t.margin == "+5 pts"
    assert v["RGBA→BGR at 1920×1200 vs copy"].ok is None
    # Judged on device time where both sides have it; the span ratio (1.6 / 3.0) is shown.
    t = v["RGB→BGRA at 1920×1200 vs copy"]
    assert t.ok is False and t.margin == "-4 pts"
    assert t.measured == "0.71× on the device (2666.7 vs 3750.0 GB/s, queued); 0.53× as event spans"
    assert t.bound.startswith("16 MB against the copy's 74 MB")
    t = v["RGBAf→RGBA_SRGB at 1920×1200 vs copy"]
    assert t.ok is True and t.margin == "+10 pts" and t.bound == ""
    t = v["upload pageable vs plain cudaMemcpy, every size ≥ 4 KiB"]  # worst 0.41 / 0.5 = 0.82 at 4 KiB
    assert t.ok is False and t.measured == "0.82× (worst, at 4 KiB)" and t.margin == "-18 pts"
    t = v["upload pageable vs plain cudaMemcpy, ≥ 256 MiB"]  # 27 / 10 = 2.7
    assert t.ok is True and t.margin == "+20 pts"
    assert v["download pageable vs plain cudaMemcpy, every size ≥ 4 KiB"].ok is None
    t = v["Python stream call (transformed on 960×600), host time"]
    assert t.ok is True and t.margin == "+1.0 µs"
    t = v["Python blocking call (transformed on 960×600) over its device time"]  # 25 - 10 = 15 > 10
    assert t.ok is False and t.measured.startswith("+15.0 µs") and t.margin == "-5.0 µs"
    t = v["1920×1200 streaming (process --frames, pageable frames) vs its bound"]
    assert t.ok is False and t.measured == "1000 frames/s of 1194 (84%)" and t.margin == "-6 pts"
    assert v["2448×2048 streaming (process --frames, pageable frames) vs its bound"].ok is None
    # 1100 / 1193.6 = 92.2 %
    t = v["1920×1200 streaming (process --frames, page-locked frames) vs its bound"]
    assert t.ok is True and t.measured == "1100 frames/s of 1194 (92%)" and t.margin == "+2 pts"
    assert v["2448×2048 streaming (process --frames, page-locked frames) vs its bound"].ok is None


def test_the_opencl_ratio_takes_device_times_where_cuda_and_an_opencl_gpu_have_them():
    rows = [entry(f"pc_pipeline/cuda0/{FRAME}/manual_time", 150, unit="us", queued_us=130.0),
            entry(f"pc_pipeline/opencl0/{FRAME}/manual_time", 800, unit="us", queued_us=325.0)]
    v = by_target(compare.frame_pipeline_targets(compare.load_results([{"context": {}, "benchmarks": rows}], None)))
    t = v["1920×1200 pipeline on the fastest OpenCL device vs CUDA"]  # 325 / 130 = 2.5
    assert t.ok is False and t.measured == "2.50× (opencl0 325 µs; on the device, CUDA 130 µs)"
    # A CPU device (PoCL) has no device time: it neither forces spans nor wins by its span.
    rows.append(entry(f"pc_pipeline/opencl1/{FRAME}/manual_time", 200, unit="us"))
    v = by_target(compare.frame_pipeline_targets(compare.load_results([{"context": {}, "benchmarks": rows}], None)))
    t = v["1920×1200 pipeline on the fastest OpenCL device vs CUDA"]
    assert t.measured == "2.50× (opencl0 325 µs; on the device, CUDA 130 µs)"
    del rows[2]
    # Without the OpenCL side's queued time, both sides are spans: 800 / 150 = 5.33.
    rows[1] = entry(f"pc_pipeline/opencl0/{FRAME}/manual_time", 800, unit="us")
    v = by_target(compare.frame_pipeline_targets(compare.load_results([{"context": {}, "benchmarks": rows}], None)))
    assert v["1920×1200 pipeline on the fastest OpenCL device vs CUDA"].measured == "5.33× (opencl0 800 µs; event spans)"


def test_an_opencl_device_is_reported_without_cuda_baselines():
    m = compare.load_results(canned_docs(), "opencl1")
    assert m.get("devicearray", "clone_continuous", GIB).bytes_per_second == pytest.approx(3500e9)
    assert not m.has_source("cuda")
    v = by_target(compare.evaluate_targets(m))
    assert v["contiguous clone vs cudaMemcpyAsync D2D"].ok is None
    assert v["pool allocation (allocate+release pair)"].ok is None


def test_report_tables_and_section_replacement():
    m = with_peers(compare.load_results(canned_docs(), None))
    # Python rows of one operation at two sizes (the pipeline at both camera sizes).
    m.add(compare.Result("python", "pc_pipeline", FIVE_MP, 0.4e-3))
    m.add(compare.Result("python", "transformed_stream_host", None, 4.5e-6))
    section = compare.render_section(m, compare.evaluate_targets(m), {"date": "2026-11-29", "gpu": "NVIDIA H200",
                                                                      "driver": "580.159.04"}, "perf_bandwidth.png")
    assert section.startswith(compare.BEGIN) and section.rstrip().endswith(compare.END)
    assert "| contiguous clone vs cudaMemcpyAsync D2D | 1.00× (4186.5 vs 4176.0 GB/s at 1 GiB) | ≥ 0.95× | **PASS** |" \
        in section
    # Copies table: ours, raw CUDA and its ratio, torch and its ratio (4186.5 / 4176.0, 2800.9 / 900).
    assert "| clone_continuous | 1 GiB | 4186.5 | 4176.0 | 1.00 | - | - |" in section
    assert "| clone_xyz_of_xyzw | 1 GiB | 2800.9 | - | - | 900.0 | 3.11 |" in section
    assert "| 1 KiB | 1.70 | 0.67 | 0.39 | - | - |" in section  # allocation: 0.67 / 1.70 = 0.39
    assert "| XYZ→XYZW | 64M | 1990.0 | 47% | 900.0 | 2.21 |" in section
    assert "| pipeline | 850 | 300 | 870 | 640 | - | 2,304,000 | 3,315 |" in section
    assert "| Python pc_pipeline (1920×1200) | 200.00 |" in section
    assert "| Python pc_pipeline (2448×2048) | 400.00 |" in section
    assert "| Python transformed_stream_host | 4.50 |" in section
    assert "| C++ export (1920×1200 PointXYZ) | 4.00 |" in section
    assert f"benchmark error: convert_RGB_to_BGRA/cuda0/{FRAME}/manual_time: out of memory" in section
    assert "![bandwidth against size](perf_bandwidth.png)" in section
    assert "NVIDIA H200" in section and "580.159.04" in section

    doc = "# Performance\n\nHand-written intro.\n\n" + compare.BEGIN + "\nold\n" + compare.END + "\n\n## After\n"
    updated = compare.update_document(doc, section)
    assert "old" not in updated and "Hand-written intro." in updated and updated.endswith("## After\n")
    assert compare.update_document(updated, section) == updated  # idempotent
    appended = compare.update_document("# Performance\n", section)
    assert appended == "# Performance\n\n" + section


def test_main_writes_the_report_from_json_files(tmp_path, capsys):
    paths = []
    for i, doc in enumerate(canned_docs()):
        p = tmp_path / f"bench{i}.json"
        p.write_text(json.dumps(doc))
        paths.append(str(p))
    out = tmp_path / "PERFORMANCE.md"
    out.write_text("# Performance\n\nKept.\n")
    rc = compare.main(["--from-json", *paths, "--no-peers", "--output", str(out),
                       "--chart", str(tmp_path / "chart.png")])
    assert rc == 0
    text = out.read_text()
    assert text.startswith("# Performance\n\nKept.\n") and compare.BEGIN in text and compare.END in text
    printed = capsys.readouterr().out
    assert "PASS  contiguous clone vs cudaMemcpyAsync D2D" in printed
    assert "MISS  strided clone (XYZ of XYZW) vs contiguous clone" in printed


def test_main_fails_when_no_result_is_found(tmp_path):
    p = tmp_path / "empty.json"
    p.write_text(json.dumps({"context": {}, "benchmarks": []}))
    assert compare.main(["--from-json", str(p), "--no-peers", "--output", str(tmp_path / "P.md")]) == 1
    assert not (tmp_path / "P.md").exists()


def test_a_slow_python_stream_call_is_explained_by_the_driver_calls_it_needs():
    rows = [entry("baseline_kernel_launch/cuda0", 4.2, unit="us"),
            entry("baseline_cudaMallocAsync_pair/cuda0/1024", 1300),
            entry("baseline_cudaMallocAsync_pair/cuda0/1048576", 1200)]
    m = compare.load_results([{"context": {}, "benchmarks": rows}], None)
    m.add(compare.Result("python", "transformed_stream_host", None, 13.1e-6))
    t = by_target(compare.frame_pipeline_targets(m))["Python stream call (transformed on 960×600), host time"]
    assert t.ok is False and t.margin == "-8.1 µs"
    # 4.2 + 1.2 (the cheaper pair) = 5.4 µs > 5 µs
    assert t.bound.endswith("one kernel launch (4.2 µs) and one cudaMallocAsync + cudaFreeAsync pair (1.2 µs), "
                            "cost this host 5.4 µs, above the target before any library code)"), t.bound
    # Without the allocation baseline only the launch is named.
    m = compare.load_results([{"context": {}, "benchmarks": rows[:1]}], None)
    m.add(compare.Result("python", "transformed_stream_host", None, 13.1e-6))
    t = by_target(compare.frame_pipeline_targets(m))["Python stream call (transformed on 960×600), host time"]
    assert t.bound.endswith("(one kernel launch alone costs this host 4.2 µs)"), t.bound
