#!/usr/bin/env python3
"""Compares two builds' Google Benchmark results, row by row, over several rounds.

    bench/compare_builds.py --before B1.json B2.json ... --after A1.json A2.json ...
                            [--threshold 0.03] [--markdown]

Run the two builds' benchmarks in alternating rounds on the same machine (before,
after, after, before, ...), so that drift in clocks or in the host's load falls on
both sides alike, and pass every round's JSON file. For each benchmark row this prints
the median real time of each side, their ratio (after / before), and a 95 % bootstrap
interval of that ratio: the rounds of each side are resampled with replacement and the
ratio of the resampled medians recomputed. A row is *slower* when the whole interval
lies above 1 + threshold, *faster* when it lies below 1 - threshold; otherwise the
rounds cannot tell the builds apart at that threshold. Short rows of a few microseconds
are often bimodal (a launch that does or does not wait for the host), which makes their
intervals wide: more rounds narrow them.

The exit status is 1 when any row is slower, else 0.
"""
import argparse
import collections
import json
import random
import statistics
import sys

UNIT_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def load_rounds(paths):
    """{row name: [real time in µs, one per file that has the row]}."""
    rows = collections.defaultdict(list)
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for b in data.get("benchmarks", []):
            if b.get("run_type") == "aggregate" or b.get("error_occurred"):
                continue
            rows[b.get("run_name", b["name"])].append(b["real_time"] * UNIT_US[b.get("time_unit", "ns")])
    return rows


def bootstrap_interval(before, after, resamples, rng):
    """2.5th and 97.5th percentiles of median(after*) / median(before*)."""
    ratios = sorted(
        statistics.median(rng.choices(after, k=len(after))) / statistics.median(rng.choices(before, k=len(before)))
        for _ in range(resamples))
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def compare(before, after, threshold, resamples=4000, seed=1):
    """One result per row present on both sides: (name, before median, after median,
    ratio, interval low, interval high, verdict)."""
    rng = random.Random(seed)
    results = []
    for name in sorted(set(before) & set(after)):
        b, a = before[name], after[name]
        ratio = statistics.median(a) / statistics.median(b)
        low, high = bootstrap_interval(b, a, resamples, rng)
        verdict = "slower" if low > 1 + threshold else "faster" if high < 1 - threshold else "same"
        results.append((name, statistics.median(b), statistics.median(a), ratio, low, high, verdict))
    return results


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", nargs="+", required=True, help="benchmark JSON files of the before build")
    p.add_argument("--after", nargs="+", required=True, help="benchmark JSON files of the after build")
    p.add_argument("--threshold", type=float, default=0.03, help="relative change that counts (default 0.03)")
    p.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = p.parse_args(argv)
    before, after = load_rounds(args.before), load_rounds(args.after)
    results = compare(before, after, args.threshold)
    if args.markdown:
        print("| row | before µs | after µs | after / before | 95 % interval | verdict |")
        print("| --- | ---: | ---: | ---: | --- | --- |")
        for name, b, a, r, lo, hi, v in results:
            print(f"| {name} | {b:.2f} | {a:.2f} | {r:.3f} | {lo:.3f}–{hi:.3f} | {v} |")
    else:
        for name, b, a, r, lo, hi, v in results:
            print(f"{name[:60]:60s} {b:11.2f} {a:11.2f} {r:7.3f} [{lo:.3f}, {hi:.3f}] {v}")
    counts = collections.Counter(v for *_, v in results)
    rounds = f"{min(map(len, before.values()), default=0)}/{min(map(len, after.values()), default=0)}"
    print(f"{len(results)} rows, rounds before/after {rounds}, threshold {args.threshold:.0%}: "
          f"{counts['slower']} slower, {counts['faster']} faster, {counts['same']} indistinguishable")
    return 1 if counts["slower"] else 0


if __name__ == "__main__":
    sys.exit(main())
