"""How reliable a score is: per-task agreement across repeated published runs of one configuration.

Where one owner has published at least settings.CONSISTENCY_MIN_RUNS runs of one configuration
(CONFIGURATION_FIELDS: owner, dataset, agent, model, effort, sandbox), each task's scores are set side by side:

- a task whose every score, at every level and in every run, is 0 or 100 is pass/fail. Its pass^k is the share
  of its levels that all k runs passed (pass^1, the share of runs that passed, is beside it): a task passed only
  sometimes counts against pass^k however often it passed.
- any other task is scored: its spread is the mean, over its levels, of the range (highest minus lowest score)
  across the runs.

Only the (task, level) pairs every run scored are compared. The summary figures are means over tasks with
percentile-bootstrap intervals over tasks (leaderboard.stats), like the board's. `agreement` is pure: it takes
each run's `tasks` (a LeaderboardEntry's, or any scoring of the same results, such as spot validations).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db.models import Count, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from contracts import PROMPT_LEVELS
from leaderboard.figures import domain_of
from leaderboard.models import LeaderboardEntry
from leaderboard.stats import bootstrap_ci
from portal.submissions.models import CONFIGURATION_FIELDS

_EPSILON = 1e-9


def _passed(score: float) -> bool:
    return score >= 100.0 - _EPSILON


def _binary(score: float) -> bool:
    return score <= _EPSILON or _passed(score)


def _interval(values: list[float]) -> dict[str, float] | None:
    interval = bootstrap_ci(values, confidence=settings.BOARD_INTERVAL_CONFIDENCE)
    return None if interval is None else {"value": interval.mean, "low": interval.low, "high": interval.high}


def _levels(runs: list[dict[str, Any]], task: str) -> dict[str, list[float]]:
    """Each level of `task` that every run scored: its scores, run by run."""
    out = {}
    for level in PROMPT_LEVELS:
        scores = [((run.get(task) or {}).get("levels") or {}).get(level) for run in runs]
        if all(isinstance(s, (int, float)) and type(s) is not bool for s in scores):
            out[level] = [float(s) for s in scores]  # type: ignore[arg-type]
    return out


def agreement(runs: list[dict[str, Any]], domain: str | None = None) -> dict[str, Any]:
    """Per-task agreement of `runs` (each a `tasks` map: {task_id: {"levels": {level: score}}}), on `domain`'s
    tasks when given; scores and spreads in percent, like the board."""
    k = len(runs)
    shared = set.intersection(*(set(run) for run in runs)) if runs else set()
    per_task: list[dict[str, Any]] = []
    for task in sorted(t for t in shared if domain is None or domain_of(t) == domain):
        levels = _levels(runs, task)
        if not levels:
            continue
        if all(_binary(s) for scores in levels.values() for s in scores):
            passes = {lv: sum(_passed(s) for s in scores) for lv, scores in levels.items()}
            per_task.append({
                "task_id": task, "kind": "pass/fail",
                "levels": {lv: {"passes": n, "runs": k} for lv, n in passes.items()},
                "pass_k": round(100.0 * sum(n == k for n in passes.values()) / len(passes), 4),
                "pass_1": round(100.0 * sum(passes.values()) / (k * len(passes)), 4)})
        else:
            ranges = {lv: (min(scores), max(scores)) for lv, scores in levels.items()}
            per_task.append({
                "task_id": task, "kind": "scored",
                "levels": {lv: {"low": round(lo, 4), "high": round(hi, 4)} for lv, (lo, hi) in ranges.items()},
                "range": round(sum(hi - lo for lo, hi in ranges.values()) / len(ranges), 4)})
    pass_fail = [t for t in per_task if t["kind"] == "pass/fail"]
    scored = [t for t in per_task if t["kind"] == "scored"]
    return {
        "runs": k, "tasks": len(per_task),
        "pass_fail": {"tasks": len(pass_fail), "pass_k": _interval([t["pass_k"] for t in pass_fail]),
                      "pass_1": _interval([t["pass_1"] for t in pass_fail])} if pass_fail else None,
        "scored": {"tasks": len(scored), "range": _interval([t["range"] for t in scored])} if scored else None,
        "per_task": per_task,
    }


def summary(full: dict[str, Any]) -> dict[str, Any]:
    """What the board's JSON carries of an agreement: everything but the per-task rows."""
    return {key: value for key, value in full.items() if key != "per_task"}


# --- published runs ---------------------------------------------------------------------------------------

def configuration_entries(entry: LeaderboardEntry) -> list[LeaderboardEntry]:
    """Every published run of `entry`'s configuration (its owner's, on its dataset), oldest first."""
    same = {field: entry.serializable_value(field) for field in CONFIGURATION_FIELDS}
    return list(LeaderboardEntry.objects.filter(**same).only("id", "display_name", "published_at", "mean", "tasks")
                .order_by("published_at", "id"))


def entry_consistency(entry: LeaderboardEntry) -> dict[str, Any]:
    """The entry page's and the entry JSON's agreement across its configuration's published runs: `agreement`
    with the runs it compares, or only how many there are while they are fewer than the minimum."""
    entries = configuration_entries(entry)
    runs = [{"id": e.id, "display_name": e.display_name, "published_at": e.published_at.isoformat(),
             "mean": e.mean, "url": f"/leaderboard/entries/{e.id}/"} for e in entries]
    needed = settings.CONSISTENCY_MIN_RUNS
    base = {"min_runs": needed, "published_runs": runs}
    if len(entries) < needed:
        return {**base, "agreement": None}
    return {**base, "agreement": agreement([e.tasks or {} for e in entries])}


def published_runs() -> Coalesce:
    """How many published runs the outer board row's configuration has (a subquery: no query of its own)."""
    runs = (LeaderboardEntry.objects.filter(**{f: OuterRef(f) for f in CONFIGURATION_FIELDS})
            .order_by().values("owner").annotate(n=Count("id")).values("n"))
    return Coalesce(Subquery(runs[:1]), 0)


def board_consistency(rows: Sequence[LeaderboardEntry], domain: str | None) -> dict[int, dict[str, Any]]:
    """For each board row (annotated with `published_runs`) whose configuration has enough published runs, the
    summary of their agreement (on `domain`'s tasks when given). No query unless some row has; then one."""
    repeated = [row for row in rows if row.published_runs >= settings.CONSISTENCY_MIN_RUNS]  # type: ignore[attr-defined]
    if not repeated:
        return {}
    wanted = Q()
    for row in repeated:
        wanted |= Q(**{field: row.serializable_value(field) for field in CONFIGURATION_FIELDS})
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for entry in LeaderboardEntry.objects.filter(wanted).order_by("published_at", "id").values(
            "tasks", *CONFIGURATION_FIELDS):
        groups[tuple(entry[field] for field in CONFIGURATION_FIELDS)].append(entry["tasks"] or {})
    return {row.id: summary(agreement(groups[tuple(row.serializable_value(f) for f in CONFIGURATION_FIELDS)], domain))
            for row in repeated}
