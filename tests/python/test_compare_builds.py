"""bench/compare_builds.py on canned Google Benchmark rounds whose verdicts are clear by
construction: a row 20 % slower in every round, one 20 % faster, one unchanged, one that
only one build has, and a bimodal row that the rounds cannot decide."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("da_compare_builds", ROOT / "bench" / "compare_builds.py")
compare_builds = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_builds)

ROUNDS = 8


def write_rounds(directory, side, rows_per_round):
    """One JSON file per round, as Google Benchmark writes them; times in µs."""
    paths = []
    for r, rows in enumerate(rows_per_round):
        path = directory / f"{side}-{r}.json"
        benchmarks = [{"name": name, "run_name": name, "run_type": "iteration", "iterations": 10,
                       "real_time": t, "cpu_time": t, "time_unit": "us"} for name, t in rows.items()]
        # An aggregate row must be ignored.
        benchmarks.append({"name": "slow_mean", "run_name": "slow", "run_type": "aggregate", "real_time": 1e9,
                           "cpu_time": 1e9, "time_unit": "us"})
        path.write_text(json.dumps({"context": {}, "benchmarks": benchmarks}))
        paths.append(str(path))
    return paths


def canned(tmp_path):
    wobble = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99]
    before = [{"slow": 10.0 * w, "fast": 20.0 * w, "same": 30.0 * w, "bimodal": 10.0 if r % 2 else 14.0,
               "gone": 5.0} for r, w in enumerate(wobble)]
    after = [{"slow": 12.0 * w, "fast": 16.0 * w, "same": 30.0 * w, "bimodal": 14.0 if r % 3 else 10.0}
             for r, w in enumerate(reversed(wobble))]
    return write_rounds(tmp_path, "before", before), write_rounds(tmp_path, "after", after)


def test_verdicts_follow_the_intervals(tmp_path):
    before, after = canned(tmp_path)
    results = compare_builds.compare(compare_builds.load_rounds(before), compare_builds.load_rounds(after), 0.03)
    by_name = {r[0]: r for r in results}
    assert set(by_name) == {"slow", "fast", "same", "bimodal"}  # "gone" is in one build only
    name, b, a, ratio, low, high, verdict = by_name["slow"]
    assert (b, a) == (10.0, 12.0) and abs(ratio - 1.2) < 1e-12 and low > 1.03 and verdict == "slower"
    assert by_name["fast"][6] == "faster" and abs(by_name["fast"][3] - 0.8) < 1e-12
    assert by_name["same"][6] == "same" and by_name["same"][4] <= 1.0 <= by_name["same"][5]
    # Half the rounds at 10 µs and half at 14 before; mostly 14 after: the interval
    # spans from below 1 to well above 1.03, so the rounds cannot decide.
    assert by_name["bimodal"][6] == "same" and by_name["bimodal"][4] < 1.0 < 1.03 < by_name["bimodal"][5]


def test_aggregates_are_ignored_and_rounds_counted(tmp_path):
    before, _ = canned(tmp_path)
    rows = compare_builds.load_rounds(before)
    assert len(rows["slow"]) == ROUNDS and max(rows["slow"]) < 100


def test_exit_status_and_report(tmp_path, capsys):
    before, after = canned(tmp_path)
    assert compare_builds.main(["--before", *before, "--after", *after]) == 1
    out = capsys.readouterr().out
    assert "4 rows, rounds before/after 8/8, threshold 3%: 1 slower, 1 faster, 2 indistinguishable" in out
    # Without the slow row nothing is slower: exit status 0, and a Markdown table on request.
    assert compare_builds.main(["--before", *before, "--after", *after, "--threshold", "0.25", "--markdown"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| row | before µs | after µs | after / before | 95 % interval | verdict |")
    assert "| slow | 10.00 | 12.00 | 1.200 |" in out
