"""What a published run cost and took, as the public reads it: the snapshot kept at publish, the board's
cost and tokens per task, and the cost–score chart's points and Pareto front.

A task here is one result (one instance at one prompt level): "per task" is the mean over the results whose
figure is known. A figure no result states is unknown (None, source `unknown`): never 0, never placed on the
chart. The figures and their sources come from intake (portal.submissions.usage).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from leaderboard.figures import domain_of
from portal.submissions.usage import FIGURES, SELF_REPORTED, TRAJECTORY, UNKNOWN, run_usage

DOMAIN_FIGURES = ("input_tokens", "output_tokens", "cost_usd")


def public_usage(run_figures: dict[str, Any], entry_usages: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The published snapshot: the run's figures (`Submission.usage`) and, per domain, its tokens and cost from
    its results' usage (`(task_id, SubmissionEntry.usage)`), so a domain's board can show them too. What the
    results stated against what their calls recorded stays with the reviewers."""
    if not run_figures.get("figures"):
        return {}
    by_domain: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for task_id, usage in entry_usages:
        by_domain[domain_of(task_id)].append(usage or {})
    domains = {}
    for domain, usages in sorted(by_domain.items()):
        figures = run_usage(usages)["figures"]
        domains[domain] = {name: figures[name] for name in DOMAIN_FIGURES}
    return {"results": run_figures.get("results", 0),
            "figures": {name: run_figures["figures"].get(name) for name in FIGURES},
            "prices": run_figures.get("prices") or [], "domains": domains}


def _weakest(*sources: str) -> str:
    if UNKNOWN in sources:
        return UNKNOWN
    return SELF_REPORTED if SELF_REPORTED in sources else TRAJECTORY


def board_figures(usage: dict[str, Any] | None, domain: str | None = None) -> dict[str, Any]:
    """The board's cost and tokens per task of one row (for `domain`'s results when given), their sources and
    how many results they rest on."""
    usage = usage or {}
    figures = ((usage.get("domains") or {}).get(domain) if domain else usage.get("figures")) or {}
    cost = figures.get("cost_usd") or {}
    prompt, output = figures.get("input_tokens") or {}, figures.get("output_tokens") or {}
    tokens_known = prompt.get("per_result") is not None and output.get("per_result") is not None
    return {
        "cost_per_task": cost.get("per_result"),
        "cost_source": cost.get("source") or UNKNOWN,
        "cost_results": cost.get("results") or 0,
        "tokens_per_task": prompt["per_result"] + output["per_result"] if tokens_known else None,
        "tokens_source": _weakest(prompt.get("source") or UNKNOWN, output.get("source") or UNKNOWN)
        if tokens_known else UNKNOWN,
        "usage_results": usage.get("results") or 0,
    }


def pareto_front(points: list[tuple[float, float]]) -> set[int]:
    """Indices of the points no other point beats: none is at most as costly and at least as good, and better in
    one of the two. Cost is the first coordinate (lower is better), the score the second (higher is better)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = set(), float("-inf")
    for i in order:
        if points[i][1] > best:
            front.add(i)
            best = points[i][1]
    return front


def cost_score_data(rows: list[dict[str, Any]], value: str) -> dict[str, Any]:
    """The chart's placed points (rows with a cost per task and a `value` score), numbered by score, each marked
    on the Pareto front or not; and the rows it lists without placing them (no cost data, or no score)."""
    placed = sorted((r for r in rows if r.get("cost_per_task") is not None and r.get(value) is not None),
                    key=lambda r: (-r[value], r["cost_per_task"], r["id"]))
    front = pareto_front([(r["cost_per_task"], r[value]) for r in placed])
    points = [{"number": k + 1, "id": r["id"], "display_name": r["display_name"], "cost": r["cost_per_task"],
               "cost_source": r["cost_source"], "score": r[value], "front": k in front}
              for k, r in enumerate(placed)]
    placed_ids = {r["id"] for r in placed}
    unplaced = [{"id": r["id"], "display_name": r["display_name"], "score": r.get(value),
                 "why": "no cost data" if r.get("cost_per_task") is None else f"no {value.upper()} score"}
                for r in sorted(rows, key=lambda r: r["display_name"].lower()) if r["id"] not in placed_ids]
    return {"value": value, "points": points, "unplaced": unplaced, "total": len(rows)}
