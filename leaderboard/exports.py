"""The public row shape, shared by the JSON API and the CSV download (one whitelist, one query)."""

import csv
import io
from collections.abc import Iterable
from typing import Any

from django.conf import settings

from leaderboard.figures import COLUMNS
from leaderboard.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED


def row_public(row: dict[str, Any]) -> dict[str, Any]:
    intervals = row.get("intervals") or {}
    return {
        "id": row["id"],
        "rank": row["rank"],
        "display_name": row["display_name"],
        "dataset": row["dataset"],
        "agent": row["agent"],
        "model": row["model"],
        "effort": row["effort"],
        "sandbox": row["sandbox"],
        **{column: row[column] for column in COLUMNS},
        "intervals": {column: intervals.get(column) for column in COLUMNS},
        # Mean over the results that state it; the source says how far to trust it; null is unknown, never 0.
        "cost_per_task_usd": row["cost_per_task"],
        "cost_source": row["cost_source"],
        "tokens_per_task": row["tokens_per_task"],
        "tokens_source": row["tokens_source"],
        # Agreement across the configuration's repeated published runs (leaderboard.consistency); null below the
        # minimum. The entry's JSON (`entry_url`) has it per task.
        "consistency": row.get("consistency"),
        "instances_scored": row["instances_scored"],
        "task_count": row["task_count"],
        "confirmed_attempts": row["confirmed_attempts"],
        # The owner's confirmed scorings on the dataset in the row's window (the attempt ledger); null where the
        # dataset's references are public.
        "scored_attempts": row["scored_attempts"],
        # The share of the official task set × B1–B4 scored validly; only complete rows have a rank.
        "coverage": coverage_public(row["coverage"]),
        "complete": row["complete"],
        "trust": row["trust"],
        "published_at": row["published_at"].isoformat() if row["published_at"] else None,
        "scored_at": row["scored_at"].isoformat() if row["scored_at"] else None,
        "url": f"/leaderboard/entries/{row['id']}/",
        "entry_url": f"/api/v1/leaderboard/entries/{row['id']}",
        "moderation_url": f"/leaderboard/entries/{row['id']}/#moderation",
    }


COVERAGE_FIELDS = ("percent", "valid", "expected", "tasks_covered", "tasks_expected", "levels_missing", "invalid",
                   "outcomes", "complete")


def coverage_public(cov: dict[str, Any]) -> dict[str, Any]:
    return {k: (cov or {}).get(k) for k in COVERAGE_FIELDS}


def entry_public(entry: Any, consistency: dict[str, Any]) -> dict[str, Any]:
    """One published run as JSON: its figures per level and task, what it cost and took (`usage`, with sources
    and coverage) and its agreement with its configuration's other published runs (per task)."""
    intervals = entry.intervals or {}
    return {
        "id": entry.id, "display_name": entry.display_name, "dataset": entry.dataset_id, "agent": entry.agent,
        "model": entry.model, "effort": entry.effort, "sandbox": entry.sandbox,
        **{column: getattr(entry, column) for column in COLUMNS},
        "intervals": {column: intervals.get(column) for column in COLUMNS},
        "instances_scored": entry.instances_scored, "task_count": entry.task_count,
        "coverage": coverage_public(entry.coverage), "complete": entry.complete, "trust": entry.trust,
        "tasks": entry.tasks or {},
        "usage": entry.usage or {},
        "consistency": consistency,
        "published_at": entry.published_at.isoformat() if entry.published_at else None,
        "scored_at": entry.scored_at.isoformat() if entry.scored_at else None,
        "url": f"/leaderboard/entries/{entry.id}/",
    }


def interval_method() -> dict[str, Any]:
    """How the board's intervals are computed, published with the JSON rows."""
    return {"method": "percentile bootstrap of the mean over tasks", "confidence": settings.BOARD_INTERVAL_CONFIDENCE,
            "resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED}

CSV_HEADER = ["rank", "display_name", "dataset", "agent", "model", "effort", "sandbox",
              *[f"{c}{suffix}" for c in COLUMNS for suffix in ("", "_ci_low", "_ci_high")],
              "cost_per_task_usd", "cost_source", "tokens_per_task", "tokens_source",
              "instances_scored", "task_count", "coverage_percent", "coverage_valid", "coverage_expected", "complete",
              "trust", "confirmed_attempts", "scored_attempts", "published_at", "scored_at", "url"]


# A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV injection");
# tab and carriage return start one in some programs too.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """Text as the spreadsheet should show it: a leading formula character is quoted away."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def rows_csv(rows: Iterable[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_HEADER)
    for row in map(row_public, rows):
        figures = []
        for column in COLUMNS:
            bounds = row["intervals"].get(column) or [None, None]
            figures += [row[column], bounds[0], bounds[1]]
        writer.writerow(map(csv_cell, [
            "" if row["rank"] is None else row["rank"], row["display_name"], row["dataset"], row["agent"],
            row["model"], row["effort"], row["sandbox"], *["" if v is None else v for v in figures],
            "" if row["cost_per_task_usd"] is None else row["cost_per_task_usd"], row["cost_source"],
            "" if row["tokens_per_task"] is None else row["tokens_per_task"], row["tokens_source"],
            row["instances_scored"], row["task_count"], row["coverage"]["percent"], row["coverage"]["valid"],
            row["coverage"]["expected"], "yes" if row["complete"] else "no", row["trust"],
            row["confirmed_attempts"], "" if row["scored_attempts"] is None else row["scored_attempts"],
            row["published_at"] or "", row["scored_at"] or "", row["url"]]))
    return out.getvalue()
