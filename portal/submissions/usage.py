"""What a result cost and took: tokens, model calls, steps, wall time and USD, each with where it came from.

Pure Python, no Django: the bundle verifier calls `result_usage` on every declared result.json, and intake
folds the results into the run's figures with `run_usage`. Every figure is read from the submitter's file,
so each is typed and bounded here; a figure that is absent, malformed or out of range is unknown (None),
never 0. Sources, weakest last:

- `trajectory`: recorded by the client while it ran the agent. Tokens and cost are summed here from the
  per-call records the result carries (`agent_output.model_call_records`, the official client's
  ModelCallRecord fields); calls come from those records or the official client's call summary; turns and
  tool calls from `trajectory_summary`; wall time is the client's clock (`execution_time_seconds`).
- `self-reported`: a total the result states without per-call evidence: the `cost` block (the official
  client's CostInfo: `input_tokens`, `output_tokens`, `estimated_cost_usd`), which the agent's own log
  reports. The official client writes 0 there when it knows nothing, so a 0 is read as unknown.
- `unknown`: neither.

docs/submit-results.md#cost lists the fields for submitters; the price table is `prices.py`.
"""

from __future__ import annotations

import math
from typing import Any

from portal.submissions.prices import Price, PriceTable

TRAJECTORY, SELF_REPORTED, UNKNOWN = "trajectory", "self-reported", "unknown"
# Figures per result and per run; "input_tokens" counts every prompt token (cache reads and writes included,
# where a record counts them apart).
FIGURES = ("input_tokens", "output_tokens", "model_calls", "turns", "tool_calls", "wall_seconds", "cost_usd")
# Figures a result can state itself, and that intake compares with the recorded calls (conformance flag).
COMPARED = ("cost_usd", "output_tokens")
MAX_CALL_RECORDS = 20_000  # per result; more and the records are not summed (tokens and cost fall back)
_TOKEN_CEILING = 10**12
_USD_CEILING = 10.0**6
_MODEL_CHARS = 200


def _whole(value: Any, ceiling: int = _TOKEN_CEILING) -> int | None:
    """A non-negative whole number below `ceiling`, or None (a bool, text, a fraction or a negative is not one)."""
    if type(value) is bool or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and (not math.isfinite(value) or not value.is_integer()):
        return None
    return int(value) if 0 <= value < ceiling else None


def _amount(value: Any, ceiling: float) -> float | None:
    if type(value) is bool or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number < ceiling else None


def _model(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    return " ".join(value.split())[:_MODEL_CHARS]


def result_model(result: dict[str, Any]) -> str | None:
    """The model the run configured (provenance.agent.config.model, else provenance.agent.model): the price of a
    call record that names none."""
    provenance = result.get("provenance")
    agent = provenance.get("agent") if isinstance(provenance, dict) else None
    if not isinstance(agent, dict):
        return None
    config = agent.get("config")
    return _model(config.get("model") if isinstance(config, dict) else None) or _model(agent.get("model"))


def _calls(records: list[Any], fallback_model: str | None, prices: PriceTable) -> dict[str, Any]:
    """Tokens, calls and cost summed from per-call records. A record with `attempted` null marks a stretch the
    client could not see (a malformed line, no call boundary): with one, the calls and their sums are unknown."""
    calls = prompt = output = 0
    cost: float | None = 0.0
    tokens_known, gap = True, False
    priced: set[str] = set()
    used: dict[str, Price] = {}
    for record in records:
        if not isinstance(record, dict):
            gap = True
            continue
        attempted = record.get("attempted")
        if attempted is False:
            continue  # a record the client kept that was not a call
        if attempted is not True:
            gap = True  # null (a stretch the client could not see) or unreadable
            continue
        calls += 1
        fresh, out = _whole(record.get("input_tokens")), _whole(record.get("output_tokens"))
        read, written = _whole(record.get("cache_read_tokens")) or 0, _whole(record.get("cache_write_tokens")) or 0
        if fresh is None or out is None:
            tokens_known = False
        else:
            prompt += fresh + read + written
            output += out
        stated = _amount(record.get("cost_usd"), _USD_CEILING)
        if cost is None:
            continue
        if stated is not None:
            cost += stated
            continue
        price = prices.find(_model(record.get("model")) or fallback_model)
        priced_cost = None if price is None or fresh is None or out is None else PriceTable.call_cost(
            price, input_tokens=fresh, output_tokens=out, cache_read_tokens=read, cache_write_tokens=written)
        if priced_cost is None:
            cost = None
            continue
        assert price is not None
        cost += priced_cost
        priced.add(price.model)
        used[price.model] = price
    if gap or not calls:  # no call at all: nothing tells a silent agent from an unreadable record
        return {"model_calls": None, "input_tokens": None, "output_tokens": None, "cost_usd": None, "prices": []}
    return {"model_calls": calls,
            "input_tokens": prompt if tokens_known else None, "output_tokens": output if tokens_known else None,
            "cost_usd": round(cost, 8) if cost is not None else None,
            "prices": [used[m] for m in sorted(priced)] if cost is not None else []}


def _summary_calls(agent_output: dict[str, Any]) -> int | None:
    """`calls_attempted` of the official client's `model_call_observability` summary: the client's own count of
    the calls it observed (None there when some boundary was not observable)."""
    observability = agent_output.get("model_call_observability")
    if not isinstance(observability, dict) or observability.get("capture_status") not in ("captured", "partial"):
        return None
    summary = observability.get("summary")
    return _whole(summary.get("calls_attempted")) if isinstance(summary, dict) else None


def _self_reported(result: dict[str, Any]) -> dict[str, Any]:
    stated = result.get("cost")
    if not isinstance(stated, dict):
        return {"input_tokens": None, "output_tokens": None, "cost_usd": None}
    fresh, out = _whole(stated.get("input_tokens")), _whole(stated.get("output_tokens"))
    if not fresh and not out:  # the official CostInfo's defaults: nothing was reported
        fresh = out = None
    usd = _amount(stated.get("estimated_cost_usd"), _USD_CEILING)
    return {"input_tokens": fresh, "output_tokens": out, "cost_usd": usd if usd else None}


def result_usage(result: dict[str, Any], prices: PriceTable) -> dict[str, Any]:
    """Per figure, what the recorded calls say (`trajectory`) and what the result states (`self_reported`);
    None where it says nothing readable. `prices` lists the table entries that priced calls of this result."""
    agent_output = result.get("agent_output")
    agent_output = agent_output if isinstance(agent_output, dict) else {}
    records = agent_output.get("model_call_records")
    recorded: dict[str, Any] = {"model_calls": None, "input_tokens": None, "output_tokens": None, "cost_usd": None,
                                "prices": []}
    capped = isinstance(records, list) and len(records) > MAX_CALL_RECORDS
    if isinstance(records, list) and records and not capped:
        recorded = _calls(records, result_model(result), prices)
    if recorded["model_calls"] is None and not capped:
        recorded["model_calls"] = _summary_calls(agent_output)
    summary = agent_output.get("trajectory_summary")
    summary = summary if isinstance(summary, dict) else {}
    stated = _self_reported(result)
    usage: dict[str, Any] = {
        "input_tokens": {"trajectory": recorded["input_tokens"], "self_reported": stated["input_tokens"]},
        "output_tokens": {"trajectory": recorded["output_tokens"], "self_reported": stated["output_tokens"]},
        "model_calls": {"trajectory": recorded["model_calls"], "self_reported": None},
        "turns": {"trajectory": _whole(summary.get("total_turns")), "self_reported": None},
        "tool_calls": {"trajectory": _whole(summary.get("total_tool_calls")), "self_reported": None},
        "wall_seconds": {"trajectory": _seconds(result.get("execution_time_seconds")), "self_reported": None},
        "cost_usd": {"trajectory": recorded["cost_usd"], "self_reported": stated["cost_usd"]},
        "prices": [p.public() for p in recorded["prices"]],
    }
    if capped:
        usage["records_capped"] = True
    return usage


def _seconds(value: Any) -> float | None:
    number = _amount(value, 10.0**8)
    return round(number, 3) if number is not None else None


def chosen(figure: dict[str, Any] | None) -> tuple[Any, str]:
    """The value a page shows for one figure of one result, and its source: the recorded calls' when known."""
    figure = figure or {}
    if figure.get("trajectory") is not None:
        return figure["trajectory"], TRAJECTORY
    if figure.get("self_reported") is not None:
        return figure["self_reported"], SELF_REPORTED
    return None, UNKNOWN


def _rounded(name: str, value: float, *, mean: bool = False) -> float | int:
    if name == "cost_usd":
        return round(value, 6)
    if name == "wall_seconds":
        return round(value, 1)
    return round(value, 2) if mean else int(round(value))  # counts: whole in total, not per result


def run_usage(results: list[dict[str, Any]]) -> dict[str, Any]:
    """A run's figures from its results' `result_usage`: per figure the total over the results that state it,
    the mean per result, how many results it covers and its source (`self-reported` if any result's figure is;
    `unknown` when none states it). `compared` sums, over the results that have both, what the recorded calls
    and the result's own statement say, for the reviewers' flag."""
    figures: dict[str, Any] = {}
    for name in FIGURES:
        values = [chosen(r.get(name)) for r in results]
        known = [(v, s) for v, s in values if v is not None]
        total = sum(v for v, _ in known)
        source = UNKNOWN if not known else SELF_REPORTED if any(s == SELF_REPORTED for _, s in known) else TRAJECTORY
        figures[name] = {"total": _rounded(name, total) if known else None,
                         "per_result": _rounded(name, total / len(known), mean=True) if known else None,
                         "results": len(known), "source": source}
    compared = {}
    for name in COMPARED:
        both = [(r[name]["trajectory"], r[name]["self_reported"]) for r in results
                if (r.get(name) or {}).get("trajectory") is not None and r[name].get("self_reported") is not None]
        compared[name] = {"trajectory": sum(t for t, _ in both), "self_reported": sum(s for _, s in both),
                          "results": len(both)}
    prices = {p["model"]: p for r in results for p in r.get("prices") or []}
    return {"results": len(results), "figures": figures, "compared": compared,
            "prices": [prices[m] for m in sorted(prices)]}


def discrepancy(compared: dict[str, Any]) -> float | None:
    """How far a self-reported total is from the recorded calls', as a fraction of the latter; None when the
    run has no result with both."""
    if not compared.get("results"):
        return None
    recorded, stated = float(compared["trajectory"]), float(compared["self_reported"])
    if recorded == 0:
        return 0.0 if stated == 0 else math.inf
    return abs(stated - recorded) / recorded


USAGE_TITLES = (("input_tokens", "Input tokens"), ("output_tokens", "Output tokens"), ("model_calls", "Model calls"),
                ("turns", "Turns"), ("tool_calls", "Tool calls"), ("wall_seconds", "Agent wall time"),
                ("cost_usd", "Cost"))


def usage_rows(usage: dict[str, Any]) -> dict[str, Any]:
    """A run's figures as the pages tabulate them (`run_usage`, or a board entry's snapshot): each per task and
    in total with its coverage and source, unknown where no result states it; and the prices used."""
    figures = usage.get("figures") or {}
    rows = [{"name": name, "title": title, **(figures.get(name) or {"total": None, "per_result": None,
                                                                     "results": 0, "source": UNKNOWN})}
            for name, title in USAGE_TITLES]
    return {"rows": rows, "results": usage.get("results") or 0, "prices": usage.get("prices") or [],
            "any": any(r["source"] != UNKNOWN for r in rows)}


def result_usage_figures(usage: dict[str, Any]) -> list[dict[str, Any]]:
    """One result's figures as its run page lists them: the value shown and its source, and, for the figures
    intake compares, what the result stated where its recorded calls say otherwise. Empty for a result kept
    before usage was."""
    if not usage:
        return []
    figures = []
    for name, title in USAGE_TITLES:
        value, source = chosen(usage.get(name))
        stated = (usage.get(name) or {}).get("self_reported")
        figures.append({"name": name, "title": title, "value": value, "source": source,
                        "stated": stated if name in COMPARED and source == TRAJECTORY and stated is not None
                        and stated != value else None})
    return figures
