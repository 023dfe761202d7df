"""Scan one result: pick the record to read, run the detectors over it, report what they found and how far
they read."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from portal.submissions.scanners.detectors import Detectors
from portal.submissions.scanners.model import SCANNER_VERSION, OutputSample, ScanContext, ScanLimits, ScanReport, Step
from portal.submissions.scanners.readers import (
    MalformedJson,
    Meter,
    json_array_items,
    jsonl_steps,
    log_steps,
    looks_like_jsonl,
    official_steps,
    stream_lines,
    text_lines,
)


def scan_steps(steps: Iterable[Step], *, source: str, ctx: ScanContext, meter: Meter,
               outputs: Mapping[str, OutputSample] | None = None, summary: Mapping[str, Any] | None = None,
               file_versions: Mapping[str, Any] | None = None, error_message: str = "") -> ScanReport:
    """Run every detector over `steps` (consumed once) and then over `outputs`."""
    detectors = Detectors(ctx, meter.limits, cites="line" if source == "log" else "step",
                          write_paths=history_order(file_versions) if source == "log" else None)
    try:
        for step in steps:
            detectors.step(step)
    except MalformedJson as exc:
        meter.cut = f"the trajectory stops being valid JSON: {exc}"
    paths: list[str] = []
    if isinstance(summary, Mapping) and isinstance(summary.get("unique_files_modified"), list):
        paths += [p for p in summary["unique_files_modified"] if isinstance(p, str)]
    if isinstance(file_versions, Mapping):
        paths += [p for p in file_versions if isinstance(p, str)]
    detectors.summary_paths(dict.fromkeys(paths))
    if error_message:
        detectors.extra_text("the result's error message", error_message[:100_000])
    detectors.finish(outputs or {})
    notes = list(ctx.notes) + meter.notes
    return ScanReport(version=SCANNER_VERSION, source=source, findings=detectors.sink.findings(), steps=meter.steps,
                      bytes=meter.bytes, cut=meter.cut, suppressed=detectors.sink.suppressed, notes=notes)


def history_order(file_versions: Mapping[str, Any] | None) -> list[str] | None:
    """The file of each editor write (Write, Edit, NotebookEdit) in the order the agent made them, from the
    official `file_versions` (each version knows its event's index); None when there is no usable history."""
    if not isinstance(file_versions, Mapping):
        return None
    order: list[tuple[int, int, str]] = []
    for n, (path, versions) in enumerate(list(file_versions.items())[:10_000]):
        for version in versions[:10_000] if isinstance(versions, list) else []:
            if isinstance(version, Mapping) and version.get("action") in ("write", "edit", "notebook_edit") and \
                    type(version.get("step_index")) is int:
                order.append((version["step_index"], n, str(path)))
    return [path for _, _, path in sorted(order)] or None


def scan_result(result: Mapping[str, Any], *, ctx: ScanContext, outputs: Mapping[str, OutputSample] | None = None,
                limits: ScanLimits | None = None, log_cut: int | None = None) -> ScanReport:
    """Scan what one result.json records (client contract §5.4): the agent log, read as a trajectory when
    it is JSONL and as a log otherwise, the trajectory summary, the file history, the error message.
    `log_cut` is the log's full length when only its end reached the Portal (an oversized result.json)."""
    meter = Meter(limits or ScanLimits())
    agent_output = result.get("agent_output")
    agent_output = agent_output if isinstance(agent_output, Mapping) else {}
    log = agent_output.get("log")
    error = agent_output.get("error_message")
    error = error if isinstance(error, str) else ""
    if log_cut:
        meter.note(f"only the last part of the agent log reached the Portal (it was about {log_cut} characters)")
    steps: Iterable[Step]
    if isinstance(log, str) and log.strip():
        head = log[:20_000].split("\n", 6)[:5]
        if looks_like_jsonl(head) and not log_cut:
            source, steps = "jsonl", jsonl_steps(text_lines(log, meter), meter)
        else:
            source, steps = "log", log_steps(text_lines(log, meter), meter)
    else:
        source, steps = "none", ()
    summary = agent_output.get("trajectory_summary")
    versions = agent_output.get("file_versions")
    return scan_steps(steps, source=source, ctx=ctx, meter=meter, outputs=outputs,
                      summary=summary if isinstance(summary, Mapping) else None,
                      file_versions=versions if isinstance(versions, Mapping) else None, error_message=error)


def _peek(stream: Any) -> tuple[str, Any]:
    """How a text stream starts (its first two non-blank characters), and a stream that still starts at the
    beginning."""
    buffered = stream.read(1 << 16)
    return buffered.lstrip()[:2], _Chained(buffered, stream)


class _Chained:
    """A text stream that yields `prefix` before the rest of `stream` (read and readline, bounded)."""

    def __init__(self, prefix: str, stream: Any):
        self.prefix, self.stream = prefix, stream

    def read(self, size: int | None = -1) -> str:
        size = -1 if size is None else size
        if self.prefix:
            if size < 0:
                out, self.prefix = self.prefix + self.stream.read(), ""
                return out
            out, self.prefix = self.prefix[:size], self.prefix[size:]
            return out
        return self.stream.read(size)

    def readline(self, size: int | None = -1) -> str:
        size = -1 if size is None else size
        if self.prefix:
            end = self.prefix.find("\n")
            limit = len(self.prefix) if size < 0 else min(size, len(self.prefix))
            if 0 <= end < limit:
                out, self.prefix = self.prefix[:end + 1], self.prefix[end + 1:]
                return out
            out, self.prefix = self.prefix[:limit], self.prefix[limit:]
            if self.prefix or (size >= 0 and len(out) >= size):
                return out
            return out + self.stream.readline(-1 if size < 0 else size - len(out))
        return self.stream.readline(size)


def trajectory_steps(stream: Any, meter: Meter) -> tuple[str, Iterator[Step]]:
    """(source, steps) of a trajectory file read as a text stream: the official step list (a JSON array),
    a JSONL trajectory, or else an agent log."""
    start, rest = _peek(stream)
    if start[:1] == "[" and (start[1:] in ("", "{", "]") or start[1:].isspace()):  # not a log's "[Tool] …"
        return "trajectory", official_steps(json_array_items(rest, meter), meter)
    if start[:1] == "{":
        return "jsonl", jsonl_steps(stream_lines(rest, meter), meter)
    return "log", log_steps(stream_lines(rest, meter), meter)


def scan_trajectory_file(path: Path, *, ctx: ScanContext, outputs: Mapping[str, OutputSample] | None = None,
                         limits: ScanLimits | None = None) -> ScanReport:
    """Scan a trajectory file (`<stem>.trajectory.json`, `_trajectory.jsonl` or a log) in bounded memory."""
    meter = Meter(limits or ScanLimits())
    with path.open(encoding="utf-8", errors="replace", newline="") as stream:
        source, steps = trajectory_steps(stream, meter)
        return scan_steps(steps, source=source, ctx=ctx, meter=meter, outputs=outputs)


def output_sample(data: bytes, head: int = 64 << 10, tail: int = 16 << 10) -> OutputSample:
    """What the Portal keeps of an output file's bytes for the scanners: its start, and its end if longer."""
    if len(data) <= head:
        return OutputSample(size=len(data), head=data)
    return OutputSample(size=len(data), head=data[:head], tail=data[-tail:])
