import math
from collections import Counter
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, DateTimeField, ExpressionWrapper, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from contracts import PROMPT_LEVELS
from portal.accounts.models import User
from portal.accounts.selectors import user_is_maintainer
from portal.submissions.bundle_verify import BundleLimits
from portal.submissions.models import CONFIGURATION_FIELDS, ScanFinding, ScoredAttempt, Submission
from portal.submissions.outcomes import coverage_from_levels
from portal.submissions.scanners import CATEGORIES, SEVERITIES
from portal.submissions.usage import result_usage_figures, usage_rows
from scoring.judge_services import judge_waiting
from scoring.models import Instance, InstanceScore, Task
from scoring.selectors import scoring_run_latest


def bundle_limits() -> BundleLimits:
    """The verifier's caps, from settings: for intake and for the scan that reads a stored bundle again."""
    return BundleLimits(
        max_compressed_bytes=settings.BUNDLE_MAX_COMPRESSED_BYTES,
        max_uncompressed_bytes=settings.BUNDLE_MAX_UNCOMPRESSED_BYTES,
        max_members=settings.BUNDLE_MAX_MEMBERS,
        max_ratio=settings.BUNDLE_MAX_RATIO,
        evidence_log_tail_chars=settings.EVIDENCE_LOG_TAIL_CHARS,
    )


def expected_outputs_lookup() -> Any:
    """task id -> the names of its declared outputs, in one query."""
    declared = {
        task_id: [o["name"] for o in outputs]
        for task_id, outputs in Task.objects.values_list("id", "declared_outputs")
    }
    return lambda task_id: declared.get(task_id, [])


# The tasks a run is measured against: what the catalog publishes as part of the benchmark (retired and
# definition-only tasks are not). Coverage, completeness reports and the board all use this one set.
OFFICIAL_TASK_STATUSES = (Task.Status.SAMPLE, Task.Status.FINAL)


def official_task_ids(dataset_id: str) -> list[str]:
    return list(Instance.objects.filter(dataset_id=dataset_id, task__status__in=OFFICIAL_TASK_STATUSES)
                .order_by("task_id").values_list("task_id", flat=True).distinct())


def scoring_coverage(scoring: Any) -> dict[str, Any]:
    """A scoring's coverage (portal.submissions.outcomes): recorded when it finished, or worked out from its
    per-task figures for a scoring older than that."""
    aggregate = scoring.aggregate or {}
    if aggregate.get("coverage"):
        return dict(aggregate["coverage"])
    return coverage_from_levels(aggregate.get("tasks") or {}, official_task_ids(scoring.submission.dataset_id))


def configuration_of(run: Any) -> dict[str, Any]:
    """The configuration of a run or of a board row, as filter arguments (ids: no query)."""
    return {field: run.serializable_value(field) for field in CONFIGURATION_FIELDS}


PUBLISHED, REJECTED = "published", "rejected"


def run_state(submission: Submission) -> str:
    """Where a run stands, in one word for the upload answer and the progress API: its status (draft,
    queued, scoring, scored, failed, withdrawn, expired), or "published" / "rejected" once a maintainer
    decided so (leaderboard.models.RunReview, read through its reverse accessor: this app does not import
    the leaderboard; the owner's pages word the same decision with leaderboard.selectors.owner_review_states)."""
    review = getattr(submission, "review", None)
    if review is not None and review.state in (PUBLISHED, REJECTED):
        return str(review.state)
    return str(submission.status)


def confirmed_attempts(outer: str = "") -> Coalesce:
    """How many runs the outer row's owner has confirmed with the same configuration (this one
    included): each confirm is one question to the scoring oracle. `outer` is the path from the
    outer row to its submission ("" for submissions, "submission__" for board entries)."""
    runs = (Submission.objects.filter(confirmed_at__isnull=False,
                                      **{f: OuterRef(f"{outer}{f}") for f in CONFIGURATION_FIELDS})
            .order_by().values("owner").annotate(n=Count("id")).values("n"))
    return Coalesce(Subquery(runs[:1]), 0)


def confirmed_attempts_of(submission: Submission) -> int:
    return Submission.objects.filter(confirmed_at__isnull=False, **configuration_of(submission)).count()


def attempts_sharing_tasks(owner_id: Any, dataset_id: str, tasks: set[str]) -> list[ScoredAttempt]:
    """The ledger's confirmed scorings by this owner on this dataset that share a task with `tasks`, newest
    first: what the probing flag counts (the owner's, whatever labels each bundle carried)."""
    rows = ScoredAttempt.objects.filter(owner_id=owner_id, dataset_id=dataset_id).order_by("-confirmed_at", "-id")
    return [row for row in rows if tasks & set(row.tasks or [])]


def scored_attempts(outer: str = "") -> Coalesce:
    """An annotation: how many scorings the outer row's owner confirmed on its dataset (the attempt ledger) in
    the settings.ATTEMPT_WINDOW_DAYS up to when the outer row's run was confirmed: the attempts that could have
    informed it, itself included, whatever labels each bundle carried. `outer` is the path from the outer row
    to its submission ("" for submissions, "submission__" for board entries). Callers show it only where the
    dataset's references are private (elsewhere nothing is recorded: there is nothing to probe)."""
    end = OuterRef(f"{outer}confirmed_at")
    rows = (ScoredAttempt.objects.filter(owner=OuterRef(f"{outer}owner"), dataset=OuterRef(f"{outer}dataset"),
                                         confirmed_at__lte=end,
                                         confirmed_at__gte=ExpressionWrapper(
                                             end - Value(timedelta(days=settings.ATTEMPT_WINDOW_DAYS)),
                                             output_field=DateTimeField()))
            .order_by().values("owner").annotate(n=Count("id")).values("n"))
    return Coalesce(Subquery(rows[:1]), 0)


def submission_list_for_owner(user: User) -> QuerySet[Submission]:
    return Submission.objects.filter(owner=user).select_related("dataset").order_by("-created_at")


def score_shown(value: float | None, *, exact: bool) -> float | int | None:
    """A score as its viewer may see it: exact for maintainers, a whole percent for the owner.

    Each confirm asks the scoring oracle about the private references; exact means would make it a
    precise probe. Published scores are public (and exact) on the board; this is the owner's view.
    """
    if value is None or exact:
        return value
    return math.floor(value + 0.5)


def score_digits(*, exact: bool) -> int:
    """Decimals the pages print for scores that `score_shown` gave."""
    return 1 if exact else 0


def scoring_summary(submission: Submission, with_details: bool, exact: bool) -> dict[str, Any] | None:
    """Aggregates for the owner (whole percents unless `exact`); per-result scores and reasons for
    maintainers (progress while scoring: `submission_progress`)."""
    run = scoring_run_latest(submission.id)
    if run is None:
        return None
    summary: dict[str, Any] = {"run": run}
    if run.status == "complete":
        levels = run.aggregate.get("levels", {})
        summary["aggregate"] = {"levels": [score_shown(levels.get(level), exact=exact) for level in PROMPT_LEVELS],
                                "overall": score_shown(run.aggregate.get("overall"), exact=exact)}
    if with_details:
        summary["details"] = (
            InstanceScore.objects.filter(scoring_run=run).select_related("entry").order_by("entry__base_name")
        )
        summary["history"] = list(submission.scoring_runs.order_by("number"))
    return summary


LIVE_STATUSES = (Submission.Status.QUEUED, Submission.Status.SCORING)


def submission_queue_position(submission: Submission) -> int | None:
    """1 for the next run to be scored; None unless queued. Runs are scored in Confirm order."""
    if submission.status != Submission.Status.QUEUED:
        return None
    ahead = Submission.objects.filter(status=Submission.Status.QUEUED, confirmed_at__lt=submission.confirmed_at)
    return ahead.count() + 1 if submission.confirmed_at else None


def submission_progress(submission: Submission, *, exact: bool) -> dict[str, Any]:
    """Where a run is between Confirm and its score, for the run page, the dashboard and the API.

    `scored`/`total` count results of the current scoring run; `tasks` gives each task's results
    scored so far and their mean percent (the task's partial score; its final one once all are in),
    to two decimals if `exact`, else whole percents.
    """
    from scoring.models import InstanceScore
    from scoring.selectors import scoring_run_latest

    progress: dict[str, Any] = {
        "status": submission.status,
        "live": submission.status in LIVE_STATUSES,
        "queue_position": submission_queue_position(submission),
        "queued_total": (Submission.objects.filter(status=Submission.Status.QUEUED).count()
                         if submission.status == Submission.Status.QUEUED else None),
        "scored": 0,
        "total": 0,
        "tasks": [],
        "judges_waiting": None,
    }
    if submission.status in (Submission.Status.DRAFT, Submission.Status.WITHDRAWN, Submission.Status.EXPIRED):
        return progress
    totals: dict[str, int] = {}
    for task_id in submission.entries.values_list("task_id", flat=True):
        totals[task_id] = totals.get(task_id, 0) + 1
    progress["total"] = sum(totals.values())
    run = scoring_run_latest(submission.id)
    sums: dict[str, list[float]] = {}
    if run is not None and submission.status != Submission.Status.QUEUED:
        for task_id, percent in InstanceScore.objects.filter(scoring_run=run).values_list("entry__task_id", "percent"):
            sums.setdefault(task_id, []).append(percent)
        if submission.status == Submission.Status.SCORING:
            progress["judges_waiting"] = _judges_waiting(run.id, with_error=exact)
    progress["scored"] = sum(len(v) for v in sums.values())
    progress["tasks"] = [
        {"task_id": task_id, "scored": len(sums.get(task_id, [])), "total": total,
         "percent": (_task_percent(sum(sums[task_id]) / len(sums[task_id]), exact=exact)
                     if sums.get(task_id) else None)}
        for task_id, total in sorted(totals.items())
    ]
    return progress


def _judges_waiting(scoring_run_id: int, *, with_error: bool) -> dict[str, Any] | None:
    """Results waiting for a judge model that did not answer: how many and when it is tried next
    (maintainers also see the endpoint's last error, which may name the endpoint)."""
    waiting = judge_waiting(scoring_run_id=scoring_run_id)
    if waiting is not None and not with_error:
        waiting = {k: v for k, v in waiting.items() if k != "last_error"}
    return waiting


def _task_percent(mean: float, *, exact: bool) -> float | int | None:
    return round(mean, 2) if exact else score_shown(mean, exact=False)


def dashboard_context(user: User) -> dict[str, Any]:
    """The owner's runs, each with its progress while queued or scoring (None otherwise) and its
    overall score as the owner may see it."""
    exact = user_is_maintainer(user)
    runs = [(run, submission_progress(run, exact=exact) if run.status in LIVE_STATUSES else None,
             score_shown(run.overall_score, exact=exact))
            for run in submission_list_for_owner(user)]
    return {"runs": runs, "live": any(progress for _, progress, _ in runs), "score_digits": score_digits(exact=exact)}


def inputs_mismatched(report: dict[str, Any]) -> list[str]:
    """Instances of a run whose results were made from inputs other than ours (see services.inputs_report)."""
    return [iid for iid, check in (report.get("inputs") or {}).items() if check.get("state") == "mismatch"]


def submission_report_context(submission: Submission, viewer: User, with_evidence: bool = False) -> dict[str, Any]:
    exact = user_is_maintainer(viewer)
    report = submission.report or {}
    per_task = [(task, [counts.get(level, 0) for level in PROMPT_LEVELS]) for task, counts in
                (report.get("per_task") or {}).items()]
    return {
        "run": submission,
        "levels": PROMPT_LEVELS,
        "per_level": [(level, (report.get("per_level") or {}).get(level, 0)) for level in PROMPT_LEVELS],
        "per_task": per_task,
        "report": report,
        "inputs": sorted((report.get("inputs") or {}).items()),
        "inputs_mismatched": inputs_mismatched(report),
        "is_owner": submission.owner_id == viewer.id,
        "viewer_is_maintainer": exact,
        "scoring": scoring_summary(submission, with_details=exact, exact=exact),
        "progress": submission_progress(submission, exact=exact),
        "score_digits": score_digits(exact=exact),
        # The viewer is the owner or a maintainer (services.submission_get_for): the only ones who see it.
        "evidence": agent_evidence_summary(submission) if with_evidence else None,
        "scan": scan_findings_summary(submission) if with_evidence else None,
    }


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def add(key: str) -> int:
        return sum((r["trajectory"] or {}).get(key) or 0 for r in rows)

    return {
        "results": len(rows),
        "with_trajectory": sum(1 for r in rows if r["trajectory"]),
        "turns": add("turns"),
        "tool_calls": add("tool_calls"),
        "code_failures": add("code_failures"),
        "wall_seconds": round(sum(r["elapsed_seconds"] or 0 for r in rows), 1),
        "timeouts": sum(1 for r in rows if r["status"] == "timeout"),
        "errors": sum(1 for r in rows if r["status"] not in ("completed", "timeout")),
    }


def agent_evidence_summary(submission: Submission) -> dict[str, Any]:
    """What the agent did, per result and totalled for the run and for each level. Callers show it
    only to the run's owner and to maintainers (it is never public)."""
    rows = []
    for base, level, status, evidence, usage in submission.entries.order_by("base_name").values_list(
            "base_name", "prompt_level", "result_status", "evidence", "usage"):
        evidence = evidence or {}
        rows.append({**evidence, "base_name": base, "level": level, "status": evidence.get("status") or status,
                     "trajectory": evidence.get("trajectory"), "elapsed_seconds": evidence.get("elapsed_seconds"),
                     "file_versions": sorted((evidence.get("file_versions") or {}).items()),
                     "usage": result_usage_figures(usage or {})})
    return {
        "usage": usage_rows(submission.usage or {}),
        "rows": rows,
        "run": _totals(rows),
        "levels": [(level, _totals([r for r in rows if r["level"] == level])) for level in PROMPT_LEVELS],
        "any": any(r["trajectory"] or r.get("log_tail") or r.get("file_versions") for r in rows),
    }


# --- the misconduct scan (portal.submissions.scanning) ---------------------------------------------

SEVERITY_RANK = {severity: n for n, severity in enumerate(SEVERITIES)}


def finding_citation(finding: ScanFinding) -> str:
    """Where a finding points, in words: the step index, the log line (and turn), the output file and line."""
    if finding.cites == "step":
        return f"step {finding.position}"
    if finding.cites == "line":
        return f"log line {finding.position}" + (f" (turn {finding.turn})" if finding.turn is not None else "")
    if finding.cites == "output":
        return f"output {finding.location}" + (f", line {finding.position}" if finding.position is not None else "")
    return f"the result's record ({finding.location})" if finding.location else "the result's record"


def scan_findings_summary(submission: Submission) -> dict[str, Any]:
    """The run's scan: its record (state, version), findings per result (each with its citation) and totals for
    the run. Only for the run's owner and maintainers: excerpts quote the agent's own record."""
    findings = sorted(ScanFinding.objects.filter(submission=submission).select_related("entry", "decided_by"),
                      key=lambda f: (f.entry.base_name, SEVERITY_RANK.get(f.severity, 9), f.id))
    by_entry: dict[str, list[ScanFinding]] = {}
    for finding in findings:
        finding.citation = finding_citation(finding)  # type: ignore[attr-defined]
        finding.category_label = CATEGORIES.get(finding.category, finding.category)  # type: ignore[attr-defined]
        by_entry.setdefault(finding.entry.base_name, []).append(finding)
    entries = list(submission.entries.order_by("base_name").values_list("base_name", "prompt_level", "scan"))
    rows = [{"base_name": base, "level": level, "scan": scan or {}, "findings": by_entry[base],
             "counts": _severity_counts(by_entry[base])} for base, level, scan in entries if base in by_entry]
    standing = [f for f in findings if f.decision != ScanFinding.Decision.DISMISSED]
    categories = Counter(f.category for f in standing)
    return {
        "record": submission.scan or {},
        "rows": rows,
        "cut": [(base, scan.get("cut")) for base, _, scan in entries if (scan or {}).get("cut")],
        "unscanned": sum(1 for _, _, scan in entries if not scan),
        "results": len(entries),
        "totals": {"findings": len(findings), "standing": len(standing),
                   "dismissed": len(findings) - len(standing), "by_severity": _severity_counts(standing),
                   "by_category": [(c, CATEGORIES[c], categories[c]) for c in CATEGORIES if categories.get(c)],
                   "results_with_findings": len(rows)},
        "any": bool(findings),
    }


def _severity_counts(findings: list[ScanFinding]) -> list[tuple[str, int]]:
    counts = Counter(f.severity for f in findings)
    return [(severity, counts[severity]) for severity in SEVERITIES if counts.get(severity)]
