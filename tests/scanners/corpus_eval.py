"""Scan the labelled set and score the scanners against its labels (used by bench/scanner_quality.py and the tests).

A case's labels name the detectors it must raise. Per detector, a case counts as a true positive when the
detector fires and is labelled, a false positive when it fires unlabelled, a false negative when it is
labelled and silent; overall figures add these up over detectors (micro-averaged). A labelled step or
output also checks the citation: some finding of that detector cites exactly that step index or file.
Three renditions of every case are scanned: the official step list (`trajectory.json`), the JSONL
(`_trajectory.jsonl`), and the `result.json` the official client writes (what the Portal reads at intake:
its summary log, sanitised, and no step list).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from portal.submissions.scanners import (
    DETECTORS,
    Finding,
    OutputSample,
    ScanContext,
    output_sample,
    scan_result,
    scan_trajectory_file,
)

CORPUS = Path(__file__).resolve().parent / "corpus"
RENDITIONS = {"trajectory": "trajectory.json", "jsonl": "_trajectory.jsonl", "intake": "result.json"}


def context_of(case: dict[str, Any]) -> ScanContext:
    ctx = case["context"]
    return ScanContext(task_id=ctx["task_id"], instance_id=ctx["instance_id"], prompt_level=ctx["prompt_level"],
                       declared_outputs=tuple((n, k) for n, k in ctx["declared_outputs"]), prompt=ctx["prompt"],
                       inputs={path: text.encode() for path, text in ctx["inputs"].items()},
                       input_names=tuple(ctx["inputs"]))


def outputs_of(directory: Path) -> dict[str, OutputSample]:
    root = directory / "outputs"
    return {p.relative_to(root).as_posix(): output_sample(p.read_bytes()) for p in sorted(root.rglob("*"))
            if p.is_file()} if root.is_dir() else {}


def scan_case(directory: Path, rendition: str) -> list[Finding]:
    case = json.loads((directory / "case.json").read_text())
    ctx, outputs = context_of(case), outputs_of(directory)
    if rendition == "intake":
        result = json.loads((directory / "result.json").read_text())
        return scan_result(result, ctx=ctx, outputs=outputs).findings
    return scan_trajectory_file(directory / RENDITIONS[rendition], ctx=ctx, outputs=outputs).findings


@dataclass
class Tally:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


@dataclass
class Evaluation:
    rendition: str
    cases: int = 0
    clean: int = 0
    per_detector: dict[str, Tally] = field(default_factory=lambda: {d: Tally() for d in DETECTORS})
    cited: int = 0
    citable: int = 0
    clean_high: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)
    uncited: list[str] = field(default_factory=list)
    false_alarms: list[str] = field(default_factory=list)

    @property
    def overall(self) -> Tally:
        return Tally(sum(t.tp for t in self.per_detector.values()), sum(t.fp for t in self.per_detector.values()),
                     sum(t.fn for t in self.per_detector.values()))


def evaluate(rendition: str, corpus: Path = CORPUS) -> Evaluation:
    result = Evaluation(rendition)
    for directory in sorted(p for p in corpus.iterdir() if (p / "case.json").is_file()):
        case = json.loads((directory / "case.json").read_text())
        findings = scan_case(directory, rendition)
        result.cases += 1
        expected = {label["detector"] for label in case["labels"]}
        found = {f.detector for f in findings}
        if case["clean"]:
            result.clean += 1
            result.clean_high += [f"{directory.name}: {f.detector} ({f.detail})" for f in findings
                                  if f.severity == "high"]
        for detector, tally in result.per_detector.items():
            if detector in expected and detector in found:
                tally.tp += 1
            elif detector in found:
                tally.fp += 1
                result.false_alarms.append(f"{directory.name}: {detector} " + "; ".join(
                    f.detail for f in findings if f.detector == detector)[:300])
            elif detector in expected:
                tally.fn += 1
                result.misses.append(f"{directory.name}: {detector}")
        if rendition == "intake":
            continue  # the summary log has lines, not the step list's indices
        for label in case["labels"]:
            result.citable += 1
            if any(f.detector == label["detector"] and (
                    (f.cites == "step" and f.position == label.get("step")) if "step" in label
                    else f.location == label.get("output")) for f in findings):
                result.cited += 1
            else:
                result.uncited.append(f"{directory.name}: {label} (cited: " + ", ".join(
                    f"{f.cites} {f.position} {f.location}".strip() for f in findings
                    if f.detector == label["detector"]) + ")")
    return result


def percent(value: float | None) -> str:
    return "   —  " if value is None else f"{value:6.3f}"
