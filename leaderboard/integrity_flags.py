"""Integrity flags of a scored run, for reviewers: conformance of what was submitted, outputs duplicated from other
runs, inputs that differ from the instance, gate-consistency anomalies. Computed when a run is scored (a completion
hook) and again on a rescore; each flag keeps its evidence."""

import hashlib
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import F

from contracts.sandbox_policy import sandbox_flag
from leaderboard.gate_consistency import GateRecord, gate_anomalies, outputs_vary_by_level
from leaderboard.models import (
    IntegrityFlag,
    OutputFingerprint,
)
from portal.submissions.models import Submission, SubmissionEntry
from portal.submissions.selectors import inputs_mismatched
from scoring.models import InstanceScore, ScoringRun, Task
from scoring.selectors import scoring_run_latest


def declared_output_digests(outputs: list[dict[str, Any]], declared: set[str]) -> dict[str, str]:
    """{path: sha256} of a result's declared outputs (the files the scorer reads), and under
    `OutputFingerprint.SET_PATH` a digest of them all. Undeclared files change no score, so an extra one
    must not make a copy look different; empty files are what every failed run ships, so they prove nothing."""
    files = {str(o.get("path")): str(o.get("sha256")) for o in outputs or []
             if str(o.get("path")) in declared and o.get("bytes")}
    if not files:
        return {}
    whole = hashlib.sha256(json.dumps(sorted(files.items())).encode()).hexdigest()
    return {**files, OutputFingerprint.SET_PATH: whole}


def _duplicate_detail(whole: set[str], shared: dict[str, set[str]]) -> str:
    def some(bases: set[str]) -> str:
        return ", ".join(sorted(bases)[:3])

    partial = set(shared) - whole
    files = ", ".join(sorted({path for base in partial for path in shared[base]})[:3])
    parts = [f"{len(whole)} result(s) with identical declared outputs, e.g. {some(whole)}"] if whole else []
    if partial:
        parts.append(f"{len(partial)} {'more ' if whole else ''}result(s) sharing a declared output file ({files}),"
                     f" e.g. {some(partial)}")
    return "; ".join(parts)


def integrity_flags_compute(*, submission_id: Any) -> list[IntegrityFlag]:
    """Recompute the run's flags from its results and its latest scoring. Safe to repeat."""
    submission = Submission.objects.select_related("dataset").get(id=submission_id)
    scoring = scoring_run_latest(submission.id)
    entries = list(SubmissionEntry.objects.filter(submission=submission).values(
        "id", "base_name", "instance_id", "task_id", "prompt_level", "outputs", "timed_out_with_outputs",
        "provenance"))
    declared = {task_id: {str(o.get("name")) for o in outputs if isinstance(o, dict)}
                for task_id, outputs in Task.objects.filter(id__in={e["task_id"] for e in entries})
                .values_list("id", "declared_outputs")}
    accepted = set(submission.dataset.accepted_sandbox_modes or [])
    flags: list[IntegrityFlag] = []
    prints = []
    for e in entries:
        for path, digest in declared_output_digests(e["outputs"], declared.get(e["task_id"], set())).items():
            prints.append(OutputFingerprint(entry_id=e["id"], submission=submission, owner_id=submission.owner_id,
                                            instance_id=e["instance_id"], prompt_level=e["prompt_level"],
                                            path=path, digest=digest))
        if e["timed_out_with_outputs"]:
            flags.append(IntegrityFlag(submission=submission, kind=IntegrityFlag.Kind.TIMED_OUT_WITH_OUTPUTS,
                                       base_name=e["base_name"],
                                       detail=f"{len(e['outputs'])} output file(s) on a timed-out result"))
        problem = sandbox_flag((e["provenance"] or {}).get("sandbox"), accepted)
        if problem:
            flags.append(IntegrityFlag(submission=submission, kind=IntegrityFlag.Kind.SANDBOX_POLICY,
                                       base_name=e["base_name"], detail=problem))
    inputs = (submission.report or {}).get("inputs") or {}
    flags += [IntegrityFlag(submission=submission, kind=IntegrityFlag.Kind.INPUTS_MISMATCH, base_name=instance_id,
                            detail=str(inputs[instance_id].get("detail") or ""))
              for instance_id in inputs_mismatched(submission.report or {})]
    if scoring is not None:
        stale = (InstanceScore.objects.filter(scoring_run=scoring)
                 .exclude(task_revision=F("entry__instance__task__revision"))
                 .values_list("entry__base_name", "task_revision", "entry__instance__task__revision"))
        flags += [IntegrityFlag(submission=submission, kind=IntegrityFlag.Kind.STALE_TASK_REVISION, base_name=base,
                                detail=f"scored against task revision {used}; the current revision is {now}")
                  for base, used, now in stale]
    if scoring is not None:
        flags += _gate_flags(submission, scoring, entries, {p.entry_id: p.digest for p in prints
                                                            if p.path == OutputFingerprint.SET_PATH})
    mirrored: list[IntegrityFlag] = []
    with transaction.atomic():
        # Replaced, not upserted: a task's declared outputs may have changed since the last computation.
        OutputFingerprint.objects.filter(submission=submission).delete()
        OutputFingerprint.objects.bulk_create(prints, batch_size=1000, ignore_conflicts=True)
        base_of = {e["id"]: e["base_name"] for e in entries}
        mine: dict[tuple[str, str, str, str], set[str]] = defaultdict(set)
        for p in prints:
            mine[(p.instance_id, p.prompt_level, p.path, p.digest)].add(base_of[p.entry_id])
        whole: dict[Any, set[str]] = defaultdict(set)  # other run -> results whose declared set is identical
        shared: dict[Any, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))  # -> result -> files
        others = (OutputFingerprint.objects.filter(digest__in={p.digest for p in prints})
                  .exclude(owner_id=submission.owner_id)
                  .values_list("submission_id", "instance_id", "prompt_level", "path", "digest"))
        for other_id, instance_id, level, path, digest in others:
            for base in mine.get((instance_id, level, path, digest), ()):
                if path == OutputFingerprint.SET_PATH:
                    whole[other_id].add(base)
                else:
                    shared[other_id][base].add(path)
        for other_id in sorted(set(whole) | set(shared), key=str):
            detail = _duplicate_detail(whole[other_id], shared[other_id])
            flags.append(IntegrityFlag(submission=submission, kind=IntegrityFlag.Kind.DUPLICATE_OUTPUTS,
                                       other_submission_id=other_id, detail=detail))
            mirrored.append(IntegrityFlag(submission_id=other_id, kind=IntegrityFlag.Kind.DUPLICATE_OUTPUTS,
                                          other_submission=submission, detail=detail))
        IntegrityFlag.objects.filter(submission=submission).delete()
        IntegrityFlag.objects.bulk_create(flags, batch_size=1000)
        IntegrityFlag.objects.bulk_create(mirrored, ignore_conflicts=True)
    return flags


def _gate_flags(submission: Submission, scoring: ScoringRun, entries: Sequence[Mapping[str, Any]],
                set_digests: dict[int, str]) -> list[IntegrityFlag]:
    """The gate-consistency anomalies (leaderboard.gate_consistency) of the scoring's validly scored results."""
    by_id = {e["id"]: e for e in entries}
    records = [GateRecord(base_name=by_id[entry_id]["base_name"], task_id=by_id[entry_id]["task_id"],
                          instance_id=by_id[entry_id]["instance_id"], prompt_level=by_id[entry_id]["prompt_level"],
                          outputs_digest=set_digests.get(entry_id, ""), hard_gates_passed=passed,
                          gate_results=list((result or {}).get("gate_results") or []),
                          score_results=list((result or {}).get("score_results") or []))
               for entry_id, passed, result in InstanceScore.objects.filter(
                   scoring_run=scoring, outcome=InstanceScore.Outcome.SCORED).values_list(
                   "entry_id", "hard_gates_passed", "result") if entry_id in by_id]
    records += _gate_records_elsewhere(submission, set(set_digests.values()))
    vary = {task_id for task_id, meta in Task.objects.filter(id__in={e["task_id"] for e in entries})
            .values_list("id", "public_meta") if outputs_vary_by_level(meta)}
    return [IntegrityFlag(submission=submission, kind=a.kind, base_name=a.base_name, detail=a.detail)
            for a in gate_anomalies(records, vary)]


def _gate_records_elsewhere(submission: Submission, digests: set[str]) -> list[GateRecord]:
    """Other runs' results with the same outputs as one of this run's (their latest scoring's gate verdict)."""
    prints = dict(OutputFingerprint.objects.filter(path=OutputFingerprint.SET_PATH, digest__in=digests)
                  .exclude(submission=submission).values_list("entry_id", "digest")[:1000])
    latest: dict[int, tuple[int, bool, str, str]] = {}
    for entry_id, number, passed, base, instance_id in (
            InstanceScore.objects.filter(entry_id__in=prints, outcome=InstanceScore.Outcome.SCORED)
            .values_list("entry_id", "scoring_run__number", "hard_gates_passed", "entry__base_name",
                         "entry__instance_id")):
        if entry_id not in latest or number > latest[entry_id][0]:
            latest[entry_id] = (number, passed, base, instance_id)
    return [GateRecord(base_name=f"{base} (another run)", task_id="", instance_id=instance_id, prompt_level="",
                       outputs_digest=prints[entry_id], hard_gates_passed=passed, gate_results=[], score_results=[],
                       elsewhere=True)
            for entry_id, (_, passed, base, instance_id) in latest.items()]


def integrity_flags_compute_for_run(scoring_run_id: int) -> None:
    """Completion hook: flags for the run a scoring just finished."""
    submission_id = ScoringRun.objects.filter(id=scoring_run_id).values_list("submission_id", flat=True).first()
    if submission_id is not None:
        integrity_flags_compute(submission_id=submission_id)

