"""Reads of scoring records for the other apps."""

import uuid

from scoring.models import ScoringRun


def scoring_run_latest(submission_id: "uuid.UUID | str") -> "ScoringRun | None":
    """The newest scoring of a submission (a rescore adds one; earlier ones are kept)."""
    return ScoringRun.objects.filter(submission_id=submission_id).order_by("-number").first()
