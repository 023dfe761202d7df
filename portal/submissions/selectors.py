from typing import Any

from django.db.models import Count, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from portal.accounts.models import User
from portal.accounts.selectors import user_is_maintainer
from portal.submissions.models import Submission
from scoring.engine.taskdef import PROMPT_LEVELS as LEVELS
from scoring.models import InstanceScore
from scoring.selectors import scoring_run_latest

# A configuration, as the board groups runs: the same owner trying the same agent setup again.
CONFIGURATION_FIELDS = ("owner", "dataset", "agent", "model", "effort", "sandbox")


def confirmed_attempts(outer: str = "") -> Coalesce:
    """How many runs the outer row's owner has confirmed with the same configuration (this one
    included): each confirm is one question to the scoring oracle. `outer` is the path from the
    outer row to its submission ("" for submissions, "submission__" for board entries)."""
    runs = (Submission.objects.filter(confirmed_at__isnull=False,
                                      **{f: OuterRef(f"{outer}{f}") for f in CONFIGURATION_FIELDS})
            .order_by().values("owner").annotate(n=Count("id")).values("n"))
    return Coalesce(Subquery(runs[:1]), 0)


def confirmed_attempts_of(submission: Submission) -> int:
    return Submission.objects.filter(
        confirmed_at__isnull=False, **{f: getattr(submission, f) for f in CONFIGURATION_FIELDS}
    ).count()


def submission_list_for_owner(user: User) -> QuerySet[Submission]:
    return Submission.objects.filter(owner=user).select_related("dataset").order_by("-created_at")


def scoring_summary(submission: Submission, with_details: bool) -> dict[str, Any] | None:
    """Progress and aggregates for the owner; per-result scores and reasons for maintainers."""
    run = scoring_run_latest(submission.id)
    if run is None:
        return None
    total = submission.entries.count()
    done = InstanceScore.objects.filter(scoring_run=run).count()
    summary: dict[str, Any] = {"run": run, "progress": {"done": done, "total": total} if done < total else None}
    if run.status == "complete":
        levels = run.aggregate.get("levels", {})
        summary["aggregate"] = {"levels": [levels.get(level) for level in LEVELS],
                                "overall": run.aggregate.get("overall")}
    if with_details:
        summary["details"] = (
            InstanceScore.objects.filter(scoring_run=run).select_related("entry").order_by("entry__base_name")
        )
        summary["history"] = list(submission.scoring_runs.order_by("number"))
    return summary


def submission_report_context(submission: Submission, viewer: User) -> dict[str, Any]:
    report = submission.report or {}
    per_task = [(task, [counts.get(level, 0) for level in LEVELS]) for task, counts in
                (report.get("per_task") or {}).items()]
    return {
        "run": submission,
        "levels": LEVELS,
        "per_level": [(level, (report.get("per_level") or {}).get(level, 0)) for level in LEVELS],
        "per_task": per_task,
        "report": report,
        "is_owner": submission.owner_id == viewer.id,
        "viewer_is_maintainer": user_is_maintainer(viewer),
        "scoring": scoring_summary(submission, with_details=user_is_maintainer(viewer)),
    }
