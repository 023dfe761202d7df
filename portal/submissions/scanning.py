"""The misconduct scan of a run: every result through the scanners (portal.submissions.scanners), findings kept.

Queued for every new draft (services._draft_create) and again when a maintainer asks. A worker streams the
stored bundle through the verifier once more, now with a `scan_result` hook, so the scanners read each
whole result.json as the bundle carries it (the agent log, the trajectory summary, the file history; the
evidence kept for reviewers holds only the log's tail) and the start and end of every declared output, and
compare the outputs with the instance's prompt and inputs. What a result's record lets them read is read
within SCANNER_MAX_BYTES_PER_RESULT, and a run's within SCANNER_MAX_BYTES_PER_RUN; past either, the
result's scan record says where it stopped and why.

A scan again (a new scanners' version) replaces the findings, except those the owner answered or a
maintainer decided: they stay, with the version that found them.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from portal.submissions.bundle_verify import BundleRejected, ResultMaterial, verify_bundle_stream
from portal.submissions.evidence import clean_text
from portal.submissions.models import ScanFinding, Submission, SubmissionEntry
from portal.submissions.scanners import SCANNER_VERSION, ScanContext, ScanLimits, ScanReport, scan_result
from portal.submissions.scanners.readers import size_text
from portal.submissions.selectors import bundle_limits, expected_outputs_lookup
from scoring.instance_files import archive_file_path, archive_files
from scoring.models import Instance

logger = logging.getLogger(__name__)
PROMPT_BYTES = 256 * 1024
INPUT_HEAD_BYTES = 256 * 1024
INPUTS_BYTES = 4 * 1024 * 1024


class _Discard:
    def write(self, data: bytes, /) -> int:
        return len(data)


def _head(path: Path, size: int) -> bytes:
    with path.open("rb") as handle:
        return handle.read(size)


def scan_context(instance: Instance, level: str) -> ScanContext:
    """What the result's agent was asked and given: its declared outputs, the level's prompt and the start of
    each input file (from the instance's public archive; reads the cached unpacked copy)."""
    declared = tuple((str(o["name"]), str(o.get("type") or "data")) for o in instance.task.declared_outputs or []
                     if isinstance(o, dict) and o.get("name"))
    prompt, inputs, sizes, names, notes = "", {}, {}, [], []
    try:
        files = archive_files(instance)
        if f"prompt_{level}.md" in files:
            prompt = _head(archive_file_path(instance, f"prompt_{level}.md"), PROMPT_BYTES).decode("utf-8", "replace")
        budget = INPUTS_BYTES
        for rel in sorted(files):
            if not rel.startswith("data/"):
                continue
            names.append(rel)
            if budget > 0:
                inputs[rel] = _head(archive_file_path(instance, rel), min(INPUT_HEAD_BYTES, budget))
                sizes[rel] = files[rel].size
                budget -= len(inputs[rel])
    except OSError:
        logger.warning("scan: the archive of %s is unreadable", instance.instance_id)
        notes.append("this Portal could not read the instance's prompt and inputs: outputs were not compared "
                     "with them")
    return ScanContext(task_id=instance.task_id, instance_id=instance.instance_id, prompt_level=level,
                       declared_outputs=declared, prompt=prompt, inputs=inputs, input_names=tuple(names),
                       input_sizes=sizes, notes=tuple(notes))


class RunScanner:
    """The verifier's `scan_result` hook for one run: a context per (instance, level), the run's byte budget."""

    def __init__(self, dataset_id: str):
        self.instances = {i.instance_id: i for i in Instance.objects.filter(dataset_id=dataset_id)
                          .select_related("task")}
        self.contexts: dict[tuple[str, str], ScanContext] = {}
        self.spent = 0

    def context(self, instance_id: Any, level: Any) -> ScanContext:
        key = (str(instance_id), str(level))
        if key not in self.contexts:
            instance = self.instances.get(key[0])
            self.contexts[key] = scan_context(instance, key[1]) if instance is not None else ScanContext(
                instance_id=key[0], prompt_level=key[1], notes=("not an instance of this dataset",))
        return self.contexts[key]

    def __call__(self, material: ResultMaterial) -> ScanReport:
        result = material.result
        ctx = self.context(result.get("instance_id"), result.get("prompt_level"))
        room = settings.SCANNER_MAX_BYTES_PER_RUN - self.spent
        if room <= 0:
            return ScanReport(version=SCANNER_VERSION, source="none", findings=[],
                              cut=f"not scanned: the run's scanning budget "
                                  f"({size_text(settings.SCANNER_MAX_BYTES_PER_RUN)}) was spent on earlier results")
        limit = min(settings.SCANNER_MAX_BYTES_PER_RESULT, room)
        report = scan_result(result, ctx=ctx, outputs=material.outputs, log_cut=material.log_cut,
                             limits=ScanLimits(max_bytes=limit))
        self.spent += report.bytes
        if report.cut and limit < settings.SCANNER_MAX_BYTES_PER_RESULT:
            report.cut = report.cut.replace("(the scanners' limit)", "(the run's scanning budget, "
                                            f"{size_text(settings.SCANNER_MAX_BYTES_PER_RUN)}, ran out here)")
        if material.outputs_unsampled:
            report.notes.append(f"{material.outputs_unsampled} output file(s) were not sampled: the bundle's output "
                                "samples were full")
        return report


def scan_state(submission_id: Any, state: str, **fields: Any) -> None:
    Submission.objects.filter(id=submission_id).update(
        scan={"state": state, "version": SCANNER_VERSION, "at": timezone.now().isoformat(), **fields})


def submission_scan(*, submission_id: Any) -> dict[str, Any]:
    """Scan every result of the run from its stored bundle and keep the findings; returns the run's scan record.
    Never raises for the bundle's content: a bundle the verifier no longer accepts is recorded as not scanned."""
    submission = Submission.objects.filter(id=submission_id).first()
    if submission is None:
        return {}
    if submission.status in Submission.ENDED_DRAFT_STATUSES or not submission.archive:
        scan_state(submission.id, "failed", reason=f"not scanned: the draft was {submission.status} and its bundle "
                   "deleted before the scan")
        return Submission.objects.get(id=submission.id).scan
    scanner = RunScanner(submission.dataset_id)
    accepted = set(submission.dataset.accepted_sandbox_modes or [])
    try:
        with default_storage.open(submission.archive, "rb") as source:
            bundle = verify_bundle_stream(source=source, sink=_Discard(), limits=bundle_limits(),
                                          known_instance_ids=set(scanner.instances),
                                          accepted_sandbox_modes=accepted,
                                          expected_outputs=expected_outputs_lookup(), scan_result=scanner)
    except BundleRejected as exc:
        scan_state(submission.id, "failed", reason=f"not scanned: the stored bundle no longer verifies ({exc.code}: "
                   f"{exc.message[:300]})")
        return Submission.objects.get(id=submission.id).scan
    reports = {entry.base_name: entry.scan for entry in bundle.entries if isinstance(entry.scan, ScanReport)}
    return _findings_store(submission, reports)


def _findings_store(submission: Submission, reports: dict[str, ScanReport]) -> dict[str, Any]:
    entries = {e.base_name: e for e in SubmissionEntry.objects.filter(submission=submission)}
    with transaction.atomic():
        Submission.objects.select_for_update().filter(id=submission.id).first()
        kept = ScanFinding.objects.filter(submission=submission).exclude(answer="", decision="")
        kept_keys = {(f.entry_id, f.detector, f.cites, f.position, f.location) for f in kept}
        ScanFinding.objects.filter(submission=submission, answer="", decision="").delete()
        rows = []
        for base, report in sorted(reports.items()):
            entry = entries.get(base)
            if entry is None:
                continue
            entry.scan = report.as_dict()
            for f in report.findings:
                if (entry.id, f.detector, f.cites, f.position, f.location) in kept_keys:
                    continue
                # A detail quotes paths and queries as the record spelled them: cleaned like the excerpts.
                rows.append(ScanFinding(
                    submission=submission, entry=entry, scanner_version=report.version, detector=f.detector,
                    category=f.category, severity=f.severity, cites=f.cites, position=f.position,
                    location=clean_text(f.location, 300), turn=f.turn, excerpt=clean_text(f.excerpt, 400),
                    detail=clean_text(f.detail, 2000), context=clean_text(f.context, 4000)))
        ScanFinding.objects.bulk_create(rows, batch_size=500)
        SubmissionEntry.objects.bulk_update(list(entries.values()), ["scan"], batch_size=500)
        sources = Counter(report.source for report in reports.values())
        record = {"state": "done", "version": SCANNER_VERSION, "at": timezone.now().isoformat(),
                  "results": len(reports), "sources": dict(sorted(sources.items())),
                  "cut": sum(1 for report in reports.values() if report.cut)}
        Submission.objects.filter(id=submission.id).update(scan=record)
        transaction.on_commit(lambda: _completed_hooks(submission.id))
    return record


def _completed_hooks(submission_id: Any) -> None:
    """`settings.SCAN_COMPLETION_HOOKS` (a published run's public counts), named in settings so that submissions
    need not import the leaderboard; a failing hook is logged and never undoes the scan."""
    for path in settings.SCAN_COMPLETION_HOOKS:
        try:
            import_string(path)(submission_id)
        except Exception:
            logger.exception("scan completion hook %s failed for run %s", path, submission_id)


def scan_failed(submission_id: Any, error: BaseException) -> None:
    """A scan the storage never let finish: recorded, so the run shows it was not scanned."""
    scan_state(submission_id, "failed",
               reason=f"not scanned: the stored bundle could not be read ({type(error).__name__})")
