"""Reads for the board and the review queue.

Public readers only ever see `LeaderboardEntry` rows (published runs) turned into whitelisted
dicts. Board rows are cached under a generation token that publish/unpublish replace, so a
page costs a fixed handful of queries however many rows the board has.
"""

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from django.core.cache import cache
from django.db.models import Count, F, OuterRef, Q, QuerySet, Subquery, Window

from contracts import PROMPT_LEVELS
from leaderboard.consistency import board_consistency, entry_consistency, published_runs
from leaderboard.costs import board_figures
from leaderboard.figures import COLUMNS, domain_breakdown, domain_of, figures
from leaderboard.models import (
    TRUST_MEANINGS,
    IntegrityFlag,
    LeaderboardEntry,
    ModerationEvent,
    ReviewAction,
    RunReview,
    TrustLabel,
)
from leaderboard.stats import Interval, rank_with_ties
from portal.errors import NotFound, ValidationFailed
from portal.submissions.conformance import KINDS as CONFORMANCE_KINDS
from portal.submissions.models import ScanFinding, Submission, SubmissionEntry
from portal.submissions.outcomes import OUTCOMES, VALID_OUTCOMES, coverage_from_levels, result_outcome, score_end
from portal.submissions.scanners import CATEGORIES
from portal.submissions.selectors import (
    agent_evidence_summary,
    configuration_of,
    confirmed_attempts,
    confirmed_attempts_of,
    inputs_mismatched,
    official_task_ids,
    scan_findings_summary,
    scored_attempts,
    scoring_coverage,
)
from portal.submissions.tools import declared_tools as tools_declared
from portal.submissions.usage import usage_rows
from scoring.models import Dataset, InstanceScore, JudgeCall, ScoringRun, Task

GENERATION_KEY = "leaderboard:generation"
CACHE_SECONDS = 24 * 3600
SORT_KEYS = {"rank", "name", "agent", "model", "effort", "sandbox", *COLUMNS, "cost", "tokens", "instances", "attempts",
             "coverage", "date"}
# Which rows a board view lists: the ranked complete runs (default), the incomplete ones (unranked), or both.
SHOW_CHOICES = ("ranked", "incomplete", "all")
# What a public row carries, for pages, JSON and CSV alike.
ROW_FIELDS = ("id", "rank", "display_name", "dataset", "agent", "model", "effort", "sandbox", *COLUMNS,
              "intervals", "cost_per_task", "cost_source", "tokens_per_task", "tokens_source", "instances_scored",
              "task_count", "confirmed_attempts", "scored_attempts", "coverage", "complete", "trust", "published_at",
              "scored_at")
# Columns read naturally A→Z / 1→n, and cost and tokens cheapest first; every other column starts with the best
# (highest) first.
ASCENDING_FIRST = frozenset({"rank", "name", "agent", "model", "effort", "sandbox", "cost", "tokens"})
_BOARD_ONLY = ("id", "dataset_id", "display_name", "agent", "model", "effort", "sandbox", "b1", "b2", "b3", "b4",
               "mean", "intervals", "instances_scored", "task_count", "published_at", "scored_at", "provenance",
               "usage", "coverage", "complete", "trust", "regrade")


T = TypeVar("T")


def board_generation() -> str:
    token = cache.get(GENERATION_KEY)
    if token is None:
        cache.add(GENERATION_KEY, uuid.uuid4().hex, None)
        token = cache.get(GENERATION_KEY) or "uncached"
    return token


def board_cache_invalidate() -> None:
    """Every cached board view becomes unreachable at once; old keys simply expire."""
    cache.set(GENERATION_KEY, uuid.uuid4().hex, None)


@dataclass(frozen=True)
class BoardQuery:
    dataset: str
    domain: str | None = None
    sort: str = "mean"
    descending: bool = True
    show: str = "ranked"  # SHOW_CHOICES
    trust: str | None = None  # one TrustLabel, or every label


def board_cached(part: str, query: "BoardQuery", build: Callable[[], T], *, per_sort: bool = True,
                 extra: tuple[str, ...] = ()) -> T:
    """The one caching policy for everything drawn from the board (rows, page HTML, charts, JSON).

    Keyed by the board generation, so a publish or unpublish retires every entry at once; `per_sort`
    says whether the sort order changes what `build` returns.
    """
    key = (f"leaderboard:{part}:{board_generation()}:{query.dataset}:{query.domain or '*'}:{query.show}"
           f":{query.trust or '*'}")
    if per_sort:
        key += f":{query.sort}:{int(query.descending)}"
    key += "".join(f":{value}" for value in extra)
    value = cache.get(key)
    if value is None:
        value = build()
        cache.set(key, value, CACHE_SECONDS)
    return value


def default_direction(sort: str) -> str:
    return "asc" if sort in ASCENDING_FIRST else "desc"


def dataset_choices() -> list[Dataset]:
    return list(Dataset.objects.order_by("-official", "name"))


def domain_choices() -> list[str]:
    return list(Task.objects.filter(status__in=[Task.Status.SAMPLE, Task.Status.FINAL])
                .order_by("domain").values_list("domain", flat=True).distinct())


def default_dataset(datasets: list[Dataset]) -> str:
    return datasets[0].name if datasets else "seed42"


def board_query_from(params: Any, datasets: list[Dataset],
                     known_domains: Callable[[], list[str]] = domain_choices) -> BoardQuery:
    """Parse ?dataset=&domain=&sort=&dir= against allowlists, before any value reaches a cache key.

    An unknown dataset is NotFound and an unknown domain is refused; an unknown sort or direction
    falls back to the default. So no request can make the board cache store a new entry.
    """
    names = {d.name for d in datasets}
    dataset = params.get("dataset") or default_dataset(datasets)
    if dataset not in names:
        raise NotFound(f"Unknown dataset {dataset!r}.")
    domain = (params.get("domain") or "").strip() or None
    if domain is not None and domain not in known_domains():
        raise ValidationFailed(f"Unknown domain {domain[:60]!r}.", code="unknown_domain")
    sort = params.get("sort") or "mean"
    if sort not in SORT_KEYS:
        sort = "mean"
    direction = params.get("dir")
    if direction not in ("asc", "desc"):
        direction = default_direction(sort)
    show = params.get("show") or "ranked"
    if show not in SHOW_CHOICES:
        raise ValidationFailed(f"Unknown view {show[:30]!r}; use {', '.join(SHOW_CHOICES)}.", code="unknown_show")
    trust = params.get("trust") or None
    if trust is not None and trust not in TrustLabel.values:
        raise ValidationFailed(f"Unknown trust label {trust[:30]!r}; use {', '.join(TrustLabel.values)}.",
                               code="unknown_trust")
    return BoardQuery(dataset=dataset, domain=domain, sort=sort, descending=direction != "asc", show=show, trust=trust)


def board_page_number(query: BoardQuery, raw: str | None, page_size: int) -> int:
    """The page a `?page=` value lands on (as Paginator.get_page settles it: not a number → 1,
    past the end → the last), from a cached row count, so a warm page never loads the rows."""
    total = board_cached("count", query, lambda: len(board_rows(query)), per_sort=False)
    last = max(1, -(-total // page_size))
    try:
        number = int(raw or 1)
    except ValueError:
        return 1
    return min(max(number, 1), last)


def board_rows(query: BoardQuery) -> list[dict[str, Any]]:
    """The board for a dataset (and domain), the rows its view shows (`show`, `trust`), sorted. A few queries on
    a cold cache, none when warm."""
    rows = board_cached("rows", query, lambda: _rows_uncached(query.dataset, query.domain), per_sort=False)
    return sort_rows(rows_shown(rows, query), query.sort, query.descending)


def rows_shown(rows: list[dict[str, Any]], query: BoardQuery) -> list[dict[str, Any]]:
    wanted = {"ranked": (True,), "incomplete": (False,), "all": (True, False)}[query.show]
    return [r for r in rows if r["complete"] in wanted and (query.trust is None or r["trust"] == query.trust)]


def board_incomplete_count(query: BoardQuery) -> int:
    """How many rows of the board are incomplete (listed apart from the ranked ones), for the page's note."""
    rows = board_cached("rows", query, lambda: _rows_uncached(query.dataset, query.domain), per_sort=False)
    return sum(1 for r in rows if not r["complete"] and (query.trust is None or r["trust"] == query.trust))


def trust_legend() -> list[dict[str, str]]:
    return [{"label": str(label), "meaning": TRUST_MEANINGS[label]} for label in TrustLabel]


def _rows_uncached(dataset: str, domain: str | None) -> list[dict[str, Any]]:
    entries = LeaderboardEntry.objects.filter(dataset_id=dataset, is_current=True)
    entries = entries.only(*_BOARD_ONLY, "tasks") if domain else entries.only(*_BOARD_ONLY)
    entries = entries.annotate(confirmed_attempts=confirmed_attempts("submission__"), published_runs=published_runs(),
                               scored_attempts=scored_attempts("submission__"),
                               references_public=F("dataset__references_public"))
    current = list(entries.order_by("id"))
    repeated = board_consistency(current, domain)
    rows = []
    for e in current:
        figs = figures(e.tasks, domain) if domain else {
            **{c: getattr(e, c) for c in COLUMNS}, "intervals": e.intervals,
            "instances_scored": e.instances_scored, "task_count": e.task_count}
        if domain and not figs["task_count"]:
            continue  # this run has no task in the domain
        rows.append({
            "id": e.id, "display_name": e.display_name, "dataset": e.dataset_id, "agent": e.agent,
            "model": e.model, "effort": e.effort, "sandbox": e.sandbox,
            **{c: figs[c] for c in COLUMNS}, "intervals": figs["intervals"],
            "instances_scored": figs["instances_scored"], "task_count": figs["task_count"],
            "confirmed_attempts": e.confirmed_attempts,
            "scored_attempts": None if e.references_public else e.scored_attempts,
            "coverage": e.coverage or {}, "coverage_percent": (e.coverage or {}).get("percent"),
            "complete": e.complete, "trust": e.trust,
            "judge_scored": int((e.provenance or {}).get("judge_scored_results") or 0),
            **board_figures(e.usage, domain), "consistency": repeated.get(e.id),
            "published_at": e.published_at, "scored_at": e.scored_at, **regrade_marks(e.regrade),
        })
    # Only complete runs are ranked: a run that covers part of the benchmark is listed apart, unranked. Complete
    # rows still scored on an older task revision (a re-grade pending) are ranked apart from the others.
    for row in rows:
        row["rank"] = None
    for group in (False, True):
        members = [r for r in rows if r["complete"] and r["older_revision"] is group]
        for row, rank in zip(members, rank_with_ties([_interval(r, "mean") for r in members]), strict=True):
            row["rank"] = rank
    return rows


def regrade_marks(regrade: dict[str, Any] | None) -> dict[str, Any]:
    """A board row's re-grade state (leaderboard.regrade): pending rows are "scored on an older revision";
    a re-graded row shows its old mean and rank until a maintainer acknowledges it."""
    regrade = regrade or {}
    return {"older_revision": regrade.get("state") == "pending",
            "regrade": regrade if regrade.get("state") == "regraded" else None}


def board_ranks(dataset: str) -> dict[int, int | None]:
    """{entry id: rank} on the dataset's whole board as it is now (uncached)."""
    return {row["id"]: row["rank"] for row in _rows_uncached(dataset, None)}


def _interval(row: dict[str, Any], column: str) -> Interval | None:
    bounds = row["intervals"].get(column)
    return Interval(row[column], bounds[0], bounds[1]) if bounds and row[column] is not None else None


_SORT_FIELD = {"name": "display_name", "instances": "instances_scored", "attempts": "scored_attempts",
               "coverage": "coverage_percent",
               "date": "published_at", "cost": "cost_per_task", "tokens": "tokens_per_task"}


def sort_rows(rows: list[dict[str, Any]], sort: str, descending: bool) -> list[dict[str, Any]]:
    field = _SORT_FIELD.get(sort, sort)
    present = [r for r in rows if r.get(field) is not None]
    missing = [r for r in rows if r.get(field) is None]
    key = (lambda r: (str(r[field]).lower(), r["id"])) if isinstance(
        present[0][field] if present else None, str) else (lambda r: (r[field], r["id"]))
    return sorted(present, key=key, reverse=descending) + missing  # no value: always last


def board_charts_data(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the two charts draw: B3 across configurations and the B1→B4 profile of the leaders."""
    by_b3 = sorted((r for r in rows if r["b3"] is not None), key=lambda r: (-r["b3"], r["id"]))
    by_mean = sorted((r for r in rows if r["mean"] is not None), key=lambda r: (-r["mean"], r["id"]))
    level_means = {}
    for level in PROMPT_LEVELS:
        values = [r[level] for r in rows if r[level] is not None]
        level_means[level] = round(sum(values) / len(values), 4) if values else None
    return {"b3": by_b3[:20], "profile": by_mean[:8], "average": level_means, "total": len(rows)}


def entry_public_get(entry_id: int) -> LeaderboardEntry:
    entry = LeaderboardEntry.objects.filter(id=entry_id).select_related("dataset").first()
    if entry is None:
        raise NotFound("No published run with this id.")
    return entry


def entry_public_detail(entry: LeaderboardEntry) -> dict[str, Any]:
    tasks = [{"task_id": t, "domain": t.split(".", 1)[0], "mean": v.get("mean"),
              "levels": [v.get("levels", {}).get(lv) for lv in PROMPT_LEVELS]} for t, v in sorted(entry.tasks.items())]
    return {"entry": entry, "domains": domain_breakdown(entry.tasks), "tasks": tasks,
            "provenance": entry.provenance, "overall": figures(entry.tasks),
            "scan": (entry.provenance or {}).get("scan") or {"state": "not_scanned"}, "categories": CATEGORIES,
            "moderation": list(moderation_log().filter(submission_id=entry.submission_id)),
            "usage": usage_rows(entry.usage or {}), "consistency": entry_consistency(entry),
            "coverage": entry.coverage or {}, "outcome_labels": OUTCOMES, "trust_legend": trust_legend(),
            "tools": (entry.provenance or {}).get("tools") or {}, "scored_attempts": entry_scored_attempts(entry)}


def entry_scored_attempts(entry: LeaderboardEntry) -> int | None:
    """The entry's "scored attempts" (the attempt ledger, as on the board); None on public references."""
    if entry.dataset.references_public:
        return None
    row = LeaderboardEntry.objects.filter(id=entry.id).annotate(n=scored_attempts("submission__")).values("n").first()
    return int(row["n"]) if row else 0


# --- the public moderation log ------------------------------------------------------------------

def moderation_log() -> QuerySet[ModerationEvent]:
    """Every publish, unpublish, rejection after publication and score-changing rescore, newest first,
    with the board entry's id while the run is on the board. Public: no maintainer, no owner."""
    entry = LeaderboardEntry.objects.filter(submission_id=OuterRef("submission_id")).values("id")[:1]
    return ModerationEvent.objects.annotate(entry_id=Subquery(entry)).order_by("-created_at", "-id")


MODERATION_RECENT = 20


def moderation_summary(dataset: str) -> dict[str, Any]:
    """A dataset board's public moderation events for its JSON export: how many, the newest, and where the
    whole log is. One query; cached with the board, which every new event invalidates."""
    events = list(moderation_log().filter(dataset_id=dataset)
                  .annotate(total=Window(Count("id")))[:MODERATION_RECENT])
    return {"count": events[0].total if events else 0,
            "log_url": "/api/v1/leaderboard/moderation", "page_url": "/leaderboard/moderation",
            "recent": [moderation_public(e) for e in events]}


def moderation_public(event: ModerationEvent) -> dict[str, Any]:
    return {"at": event.created_at.isoformat(), "kind": event.kind, "what": event.get_kind_display(),
            "run": event.display_name, "dataset": event.dataset_id, "reason": event.reason,
            "mean_before": event.mean_before, "mean_after": event.mean_after,
            "entry_id": event.entry_id, "task": event.task_id}  # type: ignore[attr-defined]


# --- the review side (maintainers only; callers check the role) -------------------------------

QUEUE_TABS = ("pending", "published", "rejected", "unpublished", "all")


def run_review_queue(tab: str) -> QuerySet[Submission]:
    latest = ScoringRun.objects.filter(submission=OuterRef("pk")).order_by("-number")
    flags = (IntegrityFlag.objects.filter(submission=OuterRef("pk")).order_by().values("submission")
             .annotate(n=Count("id")).values("n"))
    standing = (ScanFinding.objects.filter(submission=OuterRef("pk")).exclude(decision=ScanFinding.Decision.DISMISSED)
                .order_by().values("submission").annotate(n=Count("id")).values("n"))
    rows = (Submission.objects.select_related("owner", "dataset", "review")
            .annotate(latest_number=Subquery(latest.values("number")[:1]),
                      latest_status=Subquery(latest.values("status")[:1]),
                      latest_aggregate=Subquery(latest.values("aggregate")[:1]),
                      flag_count=Subquery(flags), confirmed_attempts=confirmed_attempts(),
                      standing_findings=Subquery(standing),
                      standing_high=Subquery(standing.filter(severity="high")))
            .order_by("-scored_at", "-created_at"))
    if tab == "pending":
        waiting = Q(review__isnull=True, status__in=[Submission.Status.SCORED, Submission.Status.FAILED])
        return rows.filter(waiting | Q(review__state=RunReview.State.RESCORING))
    if tab in ("published", "rejected", "unpublished"):
        return rows.filter(review__state=tab)
    return rows.exclude(status__in=[Submission.Status.DRAFT, Submission.Status.WITHDRAWN,
                                    Submission.Status.EXPIRED])


def flag_legend() -> dict[str, list[str]]:
    """What the queue's flags can say: integrity flags (found at scoring) and run-configuration flags
    (found at upload), in words."""
    return {"integrity": [label for _, label in IntegrityFlag.Kind.choices],
            "configuration": list(CONFORMANCE_KINDS.values())}


def queue_rows(submissions: Iterable[Submission]) -> list[dict[str, Any]]:
    """The queue's rows; each dataset's official task set is read once for the page."""
    official: dict[str, list[str]] = {}
    return [queue_row(s, official) for s in submissions]


def queue_row(submission: Submission, official: dict[str, list[str]] | None = None) -> dict[str, Any]:
    aggregate = submission.latest_aggregate or {}  # type: ignore[attr-defined]
    levels = aggregate.get("levels") or {}
    report = submission.report or {}
    return {
        "run": submission, "review": getattr(submission, "review", None),
        "levels": [levels.get(lv) for lv in PROMPT_LEVELS], "overall": aggregate.get("overall"),
        "results_counted": aggregate.get("results_counted"), "scoring_number": submission.latest_number,  # type: ignore[attr-defined]
        "scoring_status": submission.latest_status,  # type: ignore[attr-defined]
        "tasks_covered": report.get("tasks_covered"), "tasks_in_dataset": report.get("tasks_in_dataset"),
        "incomplete": len(submission.incomplete_instances or []),
        "flag_count": submission.flag_count or 0,  # type: ignore[attr-defined]
        "findings": submission.standing_findings or 0,  # type: ignore[attr-defined]
        "findings_high": submission.standing_high or 0,  # type: ignore[attr-defined]
        "scan_state": (submission.scan or {}).get("state", ""),
        "conformance": [{"kind": c.get("kind"), "label": CONFORMANCE_KINDS.get(c.get("kind"), c.get("kind")),
                         "detail": c.get("detail", "")} for c in submission.conformance or []],
        "confirmed_attempts": submission.confirmed_attempts,  # type: ignore[attr-defined]
        "coverage": _queue_coverage(submission, aggregate, {} if official is None else official),
    }


def _queue_coverage(submission: Submission, aggregate: dict[str, Any],
                    official: dict[str, list[str]]) -> dict[str, Any] | None:
    """The latest scoring's coverage for the queue row; None until a scoring is complete."""
    if submission.latest_status != ScoringRun.Status.COMPLETE:  # type: ignore[attr-defined]
        return None
    if aggregate.get("coverage"):
        return dict(aggregate["coverage"])
    if submission.dataset_id not in official:
        official[submission.dataset_id] = official_task_ids(submission.dataset_id)
    return coverage_from_levels(aggregate.get("tasks") or {}, official[submission.dataset_id])


def run_review_get(submission_id: Any) -> Submission:
    submission = Submission.objects.select_related("owner", "dataset").filter(id=submission_id).first()
    if submission is None:
        raise NotFound("No such run.")
    return submission


def _judge_details(detail: Any, depth: int = 0) -> list[dict[str, Any]]:
    """Judge verdicts in a scorer detail, also nested (a custom scorer wrapping a judge keeps its detail)."""
    if not isinstance(detail, dict) or depth > 6:
        return []
    if isinstance(detail.get("individual_scores"), list) and isinstance(detail.get("raw_responses"), list):
        return [detail]
    found = []
    for value in detail.values():
        for item in value if isinstance(value, list) else [value]:
            found += _judge_details(item, depth + 1)
    return found


def judge_verdicts(scores: list[InstanceScore]) -> list[dict[str, Any]]:
    """Each judge-scored detail of these scores: the judges' scores, reasonings and raw replies, the
    median and the points, and what the calls cost (maintainers only: replies quote the reference)."""
    rows = []
    for score in scores:
        result = score.result or {}
        if not result.get("judged"):
            continue
        reused = sum(1 for c in result.get("judge_calls") or [] if c.get("reused_from_scoring"))
        for entry in (result.get("gate_results") or []) + (result.get("score_results") or []):
            for detail in _judge_details(entry.get("details")):
                reasonings = detail.get("reasonings") or []
                judges = [{"score": s, "reasoning": reasonings[i] if i < len(reasonings) else "",
                           "raw": (detail.get("raw_responses") or [""] * (i + 1))[i]}
                          for i, s in enumerate(detail["individual_scores"])]
                rows.append({"base_name": score.entry.base_name, "scorer": entry.get("scorer_name"),
                             "points": entry.get("score"), "max": entry.get("max_score"),
                             "model": detail.get("model"), "median": detail.get("median_score"),
                             "normalized": detail.get("normalized_score"), "judges": judges,
                             "cost": detail.get("judge_cost") or {}, "truncated": detail.get("truncated_inputs") or [],
                             "reused_calls": reused})
    return rows


def run_review_detail(submission: Submission) -> dict[str, Any]:
    scorings = list(ScoringRun.objects.filter(submission=submission).order_by("-number"))
    current = scorings[0] if scorings else None
    scores = (list(InstanceScore.objects.filter(scoring_run=current).select_related("entry")
                   .order_by("entry__base_name")) if current else [])
    entry = LeaderboardEntry.objects.filter(submission=submission).first()
    review = RunReview.objects.filter(submission=submission).select_related("decided_by").first()
    for score in scores:
        score.result_outcome = result_outcome(score_end(score.entry, score))  # type: ignore[attr-defined]
        score.result_outcome_label = OUTCOMES[score.result_outcome]  # type: ignore[attr-defined]
        score.valid = score.result_outcome in VALID_OUTCOMES  # type: ignore[attr-defined]
    complete_scoring = current is not None and current.status == ScoringRun.Status.COMPLETE
    return {
        "run": submission, "review": review, "entry": entry, "levels": PROMPT_LEVELS,
        "coverage": scoring_coverage(current) if complete_scoring else None,
        "outcome_labels": OUTCOMES,
        "trust_legend": trust_legend(), "declared_tools": declared_tools(submission),
        "scorings": [{"run": s, "levels": [(s.aggregate.get("levels") or {}).get(lv) for lv in PROMPT_LEVELS],
                      "overall": s.aggregate.get("overall"), "results": s.aggregate.get("results_counted")}
                     for s in scorings],
        "current": current, "scores": scores,
        "failures": [s for s in scores if not s.valid],  # type: ignore[attr-defined]
        "zeros": sum(1 for s in scores if s.percent == 0),
        "flags": list(IntegrityFlag.objects.filter(submission=submission).select_related("other_submission__owner")),
        "actions": audit_log(submission),
        "confirmed_attempts": confirmed_attempts_of(submission),
        "can_publish": submission.status == Submission.Status.SCORED and current is not None
        and current.status == ScoringRun.Status.COMPLETE,
        "republish": entry is not None and current is not None and entry.scoring_run_id != current.id,
        "replaces": publish_replaces(submission),
        "inputs_mismatched": inputs_mismatched(submission.report or {}),
        "conformance": submission.conformance or [],
        "evidence": agent_evidence_summary(submission),
        "scan": scan_findings_summary(submission),
        "judges": judge_verdicts(scores),
        "judge_problems": list(JudgeCall.objects.filter(scoring_run=current).exclude(
            status=JudgeCall.Status.ANSWERED).select_related("entry").order_by("entry__base_name", "key", "index"))
        if current else [],
    }


def declared_tools(submission: Submission) -> dict[str, Any]:
    """The run's declared tool mode and external-tools setting, from its results' provenance."""
    return tools_declared(SubmissionEntry.objects.filter(submission=submission).values_list("provenance", flat=True))


def publish_replaces(submission: Submission) -> LeaderboardEntry | None:
    """The board row that publishing this run would take off the board: its configuration's current row
    if another run holds it, which (the owner being part of the configuration) is the owner's own."""
    return (LeaderboardEntry.objects.filter(is_current=True, **configuration_of(submission))
            .exclude(submission=submission).first())


@dataclass(frozen=True)
class OwnerReviewState:
    """Where a run stands with the maintainers, as its owner reads it."""

    state: str  # waiting | rescoring | published | rejected | unpublished
    label: str
    reason: str = ""  # a rejection's or unpublication's reason, written for the owner
    entry_id: int | None = None  # the board entry, once published
    entry_name: str = ""


def owner_review_states(submissions: Iterable[Submission]) -> dict[Any, OwnerReviewState]:
    """Each run's review state by run id, for its owner's pages (the run page, My runs), in two queries.

    A scored run nobody has decided on yet is waiting for review, as is a rescored one once its new
    scoring is done; runs that were never scored (drafts, queued, failed) and never reviewed have none.
    """
    runs = list(submissions)
    ids = [run.id for run in runs]
    reviews = {review.submission_id: review for review in RunReview.objects.filter(submission__in=ids)}
    entries = dict((sid, (eid, name)) for sid, eid, name in LeaderboardEntry.objects.filter(submission__in=ids)
                   .values_list("submission_id", "id", "display_name"))
    states = {}
    for run in runs:
        review = reviews.get(run.id)
        state = review.state if review else None
        if state in (None, RunReview.State.RESCORING):
            if run.status == Submission.Status.SCORED:
                states[run.id] = OwnerReviewState("waiting", "waiting for review")
            elif state == RunReview.State.RESCORING and run.status in (Submission.Status.QUEUED,
                                                                       Submission.Status.SCORING):
                states[run.id] = OwnerReviewState("rescoring", "rescore requested")
        elif state == RunReview.State.PUBLISHED:
            entry_id, name = entries.get(run.id, (None, ""))
            states[run.id] = OwnerReviewState("published", "published", entry_id=entry_id, entry_name=name)
        else:
            states[run.id] = OwnerReviewState(str(state), str(state), reason=review.reason if review else "")
    return states


def audit_log(submission: Submission) -> list[ReviewAction]:
    return list(ReviewAction.objects.filter(submission=submission).select_related("actor"))


def flag_summary(submission: Submission) -> list[dict[str, Any]]:
    counts = (IntegrityFlag.objects.filter(submission=submission).values("kind").annotate(n=Count("id"))
              .order_by("kind"))
    labels = dict(IntegrityFlag.Kind.choices)
    return [{"kind": c["kind"], "label": labels.get(c["kind"], c["kind"]), "count": c["n"]} for c in counts]


HEATMAP_ROWS = 40
HEATMAP_VALUES = (*PROMPT_LEVELS, "mean")


def heatmap_data(query: BoardQuery, value: str) -> dict[str, Any]:
    """Published configurations (the board's current rows) × tasks: each cell is that task's published
    `value` (a level or the task mean). Rows are the best by their mean over the tasks shown."""
    entries = LeaderboardEntry.objects.filter(dataset_id=query.dataset, is_current=True).only(
        "id", "display_name", "agent", "model", "tasks")
    rows: list[dict[str, Any]] = []
    for entry in entries.order_by("id"):
        published = {t: v for t, v in (entry.tasks or {}).items()
                     if query.domain is None or domain_of(t) == query.domain}
        if not published:
            continue
        cells = {t: v.get("mean") if value == "mean" else (v.get("levels") or {}).get(value)
                 for t, v in published.items()}
        means = [v["mean"] for v in published.values() if v.get("mean") is not None]
        rows.append({"id": entry.id, "display_name": entry.display_name, "cells": cells,
                     "mean": sum(means) / len(means) if means else None})
    rows.sort(key=lambda r: (r["mean"] is None, -(r["mean"] or 0.0), r["id"]))
    shown = rows[:HEATMAP_ROWS]
    task_ids = sorted({t for r in shown for t in r["cells"]}, key=lambda t: (domain_of(t), t))
    return {"tasks": task_ids, "rows": [{**r, "values": [r["cells"].get(t) for t in task_ids]} for r in shown],
            "total": len(rows)}
