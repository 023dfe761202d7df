"""Reads for the public catalog pages that combine the catalog with other apps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cli_client.formats import difficulty as policy
from proposals.models import Proposal, ReviewEvent
from scoring.models import Task


def _from_proposal(task: Task) -> dict[str, Any] | None:
    """The B1–B4 results recorded in the accepted revision of the proposal that published this task."""
    proposal = Proposal.objects.filter(task_id=task.id, status=Proposal.Status.PUBLISHED).order_by(
        "-updated_at").first()
    if proposal is None:
        return None
    accepted = proposal.events.filter(kind=ReviewEvent.Kind.ACCEPTED, revision__isnull=False).select_related(
        "revision").order_by("-created_at").first()
    if accepted is None:
        return None
    revision = accepted.revision
    assert revision is not None  # filtered on revision__isnull=False
    fields = revision.fields
    scores = {level: {"mean": fields.get(f"score_{level}")} for level in policy.PROMPT_LEVELS}
    record = {"evaluations": [{
        "date": accepted.created_at.date().isoformat(),
        "verdict": "fail" if policy.gate_problems({lv: s["mean"] for lv, s in scores.items()}) else "pass",
        "threshold": policy.DIFFICULTY_THRESHOLD,
        "sandbox": fields.get("test_sandbox"),
        # Which agent, model and provider the author used is their private evidence: scores only.
        "results": [{"scores": scores}],
    }]}
    summary = policy.public_summary(record)
    if summary is None:
        return None
    return {**summary, "source": f"the author's local test, accepted with revision {revision.number}",
            "task_version": task.version}


def _from_scores_file(task: Task) -> dict[str, Any] | None:
    """The latest evaluation in `scores/<task_id>.json` beside the catalog root the task was loaded from.

    That is where `asibench difficulty-check` run from a repository root keeps it
    (`tasks/<domain>/<name>/` ↔ `scores/<task_id>.json`). It lives outside the task directory
    on purpose: re-running the check must not change the task's files and so its revision.
    """
    root = Path(task.source_dir).parents[1]
    record = policy.read_record(policy.record_path(root.parent / "scores", task.id))
    if record is None or str(record.get("task_id")) != task.id:
        return None
    summary = policy.public_summary(record)
    if summary is None:
        return None
    return {**summary, "source": "asibench difficulty-check", "task_version": str(record.get("task_version") or "")}


def task_difficulty(task: Task) -> dict[str, Any] | None:
    """The latest difficulty evaluation of a catalog task, public fields only; None if none is recorded.

    A task published from a proposal shows the B1–B4 scores its accepted revision recorded
    (what the B3/B4 gate judged), without the author's agent, model or provider, which stay
    Portal-only evidence like the rest of task_submission.yaml. A repository task shows its
    difficulty-check record with agent and model; agent configurations, seeds and anything
    else of the check stay out (see policy.public_summary).
    """
    return _from_proposal(task) or _from_scores_file(task)
