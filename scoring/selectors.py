"""Reads of scoring records for the other apps."""

import uuid
from collections.abc import Iterable

from contracts import digests
from scoring import instance_files
from scoring.models import Instance, ScoringRun, Task


def scoring_run_latest(submission_id: "uuid.UUID | str") -> "ScoringRun | None":
    """The newest scoring of a submission (a rescore adds one; earlier ones are kept)."""
    return ScoringRun.objects.filter(submission_id=submission_id).order_by("-number").first()


def task_unscorable_reasons(task_ids: Iterable[str]) -> dict[str, str]:
    """Why this Portal cannot score each of these tasks, for those it cannot (their custom scorer
    imports what the scoring environment lacks; found when the task was loaded)."""
    return dict(Task.objects.filter(id__in=set(task_ids)).exclude(unscorable_reason="")
                .values_list("id", "unscorable_reason"))


def instance_input_digest(instance: Instance) -> str:
    """Digest of what the agent is given for this instance (prompts and data/), as `asibench run` records it."""
    return digests.input_digest({path: f.sha256 for path, f in instance_files.archive_files(instance).items()})
