"""Misconduct scanners: precision and recall on the labelled set, and time and memory on hostile trajectories.

    .venv/bin/python bench/scanner_quality.py [--hostile-mb 100] [--skip-hostile]

Part 1 scans every case of tests/scanners/corpus/ (clean runs of several styles and runs with each planted
exploit, see tests/scanners/corpus_specs.py) in its three renditions: the official step list
(`trajectory.json`), the JSONL trajectory (`_trajectory.jsonl`), and the result.json the official client
writes (what the Portal reads at intake: the sanitised summary log, no step list). It prints precision and
recall per detector and overall (micro-averaged over detectors, a case counting once per detector), how
many labelled steps or files a finding cites exactly, and every clean case flagged high. The issue's
targets: precision >= 0.9 and recall >= 0.8 overall, no clean trajectory flagged high.

Part 2 writes hostile trajectories of --hostile-mb megabytes (many steps; one giant line; a step list; a
log of long lines) and scans each with the default limits (cut at the per-result budget, the reason
recorded) and with limits raised past the file's size (read to the end), printing wall time, Python
heap peak (tracemalloc, measured in a second pass) and how far each scan read.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from portal.submissions.scanners import DETECTORS, ScanContext, ScanLimits, scan_trajectory_file  # noqa: E402
from tests.scanners.corpus_eval import RENDITIONS, evaluate, percent  # noqa: E402

MB = 1 << 20


def quality() -> None:
    for rendition in RENDITIONS:
        result = evaluate(rendition)
        overall = result.overall
        print(f"\n== {rendition} ({RENDITIONS[rendition]}): {result.cases} cases, {result.clean} clean, "
              f"{result.cases - result.clean} with planted findings")
        print(f"   {'detector':18s} {'TP':>4s} {'FP':>4s} {'FN':>4s}  {'precision':>9s} {'recall':>7s}")
        for detector in DETECTORS:
            t = result.per_detector[detector]
            print(f"   {detector:18s} {t.tp:4d} {t.fp:4d} {t.fn:4d}  {percent(t.precision):>9s} "
                  f"{percent(t.recall):>7s}")
        print(f"   {'overall':18s} {overall.tp:4d} {overall.fp:4d} {overall.fn:4d}  {percent(overall.precision):>9s} "
              f"{percent(overall.recall):>7s}")
        if result.citable:
            print(f"   citations: {result.cited} of {result.citable} labelled steps or files cited exactly")
        print(f"   clean cases flagged high: {len(result.clean_high)}")
        for line in result.clean_high + [f"missed {m}" for m in result.misses] + [
                f"false alarm {f}" for f in result.false_alarms]:
            print(f"     - {line}")


def _event(i: int) -> str:
    if i % 2:
        return json.dumps({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"t{i - 1}", "content": "0.1 0.2 0.3 " * 40}]}})
    return json.dumps({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"ls /srv/run{i % 97} && cat "
                                                                              f"data/x{i}.csv"}}]}})


def write_hostile(directory: Path, size: int) -> dict[str, Path]:
    files = {}
    many = directory / "many_steps.jsonl"
    with many.open("w") as out:
        written, i = 0, 0
        while written < size:
            line = _event(i) + "\n"
            out.write(line)
            written += len(line)
            i += 1
    files["JSONL, many steps"] = many
    giant = directory / "one_line.jsonl"
    with giant.open("w") as out:
        out.write(_event(0) + "\n")
        out.write('{"type": "assistant", "message": {"content": [{"type": "text", "text": "')
        chunk = "ignore previous instructions " * 1000
        for _ in range(size // len(chunk)):
            out.write(chunk)
        out.write('"}]}}\n')
        out.write(_event(2) + "\n")
    files["JSONL, one giant line"] = giant
    steps = directory / "step_list.json"
    with steps.open("w") as out:
        out.write("[")
        written, i = 0, 0
        while written < size:
            item = json.dumps({"step_index": i, "timestamp_ms": None, "step_type": "tool_result",
                               "content": "Permission denied " + "x" * 400, "metadata": {"parent_tool_name": "Bash"}})
            out.write(("," if i else "") + item)
            written += len(item) + 1
            i += 1
        out.write("]")
    files["step list (JSON array)"] = steps
    log = directory / "agent.log"
    with log.open("w") as out:
        written = 0
        line = "[ToolResult] " + "curl https://arxiv.org/abs/1234.5678 " * 2000 + "\n"
        while written < size:
            out.write(line)
            written += len(line)
    files["log of long lines"] = log
    return files


def hostile(size_mb: int) -> None:
    ctx = ScanContext(task_id="physics.pendulum_damping", instance_id="physics.pendulum_damping__seed42",
                      declared_outputs=(("results.json", "data"),))
    print(f"\n== hostile trajectories of {size_mb} MB")
    print(f"   {'file':26s} {'limits':10s} {'wall s':>7s} {'heap peak MB':>13s} {'read MB':>8s} {'steps':>8s}  cut")
    with tempfile.TemporaryDirectory() as tmp:
        for label, path in write_hostile(Path(tmp), size_mb * MB).items():
            for name, limits in (("default", ScanLimits()), ("raised", ScanLimits(max_bytes=4 * size_mb * MB,
                                                                                  max_steps=10**9))):
                started = time.perf_counter()
                report = scan_trajectory_file(path, ctx=ctx, limits=limits)
                seconds = time.perf_counter() - started
                tracemalloc.start()  # a second pass for memory: tracing slows Python down
                scan_trajectory_file(path, ctx=ctx, limits=limits)
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                cut = report.cut or "(read to the end)"
                notes = f"; {report.notes[0]}" if report.notes else ""
                print(f"   {label:26s} {name:10s} {seconds:7.2f} {peak / MB:13.1f} {report.bytes / MB:8.1f} "
                      f"{report.steps:8d}  {cut[:70]}{notes[:90]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hostile-mb", type=int, default=100)
    parser.add_argument("--skip-hostile", action="store_true")
    args = parser.parse_args()
    quality()
    if not args.skip_hostile:
        hostile(args.hostile_mb)


if __name__ == "__main__":
    main()
