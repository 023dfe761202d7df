"""Misconduct scanners: deterministic detectors over what a run records, each finding citing its step.

Pure Python, no Django, no network, no model: the Portal calls `scan_result` on every result.json at
intake (portal.submissions.bundle_verify hands each one over, with the start and end of its declared
outputs), and `scan_trajectory_file` reads a trajectory file directly (the bench and the labelled set).
They read the official 0.2.0 client's step list, a Claude-Code-style JSONL trajectory (ours,
`_trajectory.jsonl`) and agent logs, in bounded memory and time per byte (readers.Meter): a record past
the limits is scanned up to them and the report says where it was cut and why.

Detectors (model.DETECTORS) and what the public sees of them (model.CATEGORIES, counts only):
outside_read and reference_probe (reads outside the workspace and inputs), answer_search (network
lookups aimed at answers), typed_output and copied_values (outputs no code produced), grader_injection
(text addressed to a grader), eval_awareness, refusal, environment_error. Each finding has a severity,
cites a step index, a log line or an output file, and carries a capped excerpt with control characters
removed (templates escape it) and the cited step itself, for reviewers to open in place.
"""

from portal.submissions.scanners.model import (
    CATEGORIES,
    DETECTORS,
    SCANNER_VERSION,
    SEVERITIES,
    Finding,
    OutputSample,
    ScanContext,
    ScanLimits,
    ScanReport,
    Step,
)
from portal.submissions.scanners.readers import Meter
from portal.submissions.scanners.scan import output_sample, scan_result, scan_steps, scan_trajectory_file

__all__ = [
    "CATEGORIES",
    "DETECTORS",
    "SCANNER_VERSION",
    "SEVERITIES",
    "Finding",
    "Meter",
    "OutputSample",
    "ScanContext",
    "ScanLimits",
    "ScanReport",
    "Step",
    "output_sample",
    "scan_result",
    "scan_steps",
    "scan_trajectory_file",
]
