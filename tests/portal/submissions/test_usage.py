"""What a result cost and took, read from what each client records, with where each figure came from; and the
dated price table it is priced with where a call has tokens but no cost. No database: pure functions."""

from __future__ import annotations

import math
from datetime import date

import pytest

from portal.submissions.prices import PRICE_TABLE, PriceTable, PriceTableError, parse_price_table, price_table
from portal.submissions.usage import FIGURES, discrepancy, result_usage, run_usage
from tests.usage_bundles import MODEL, Call, claude_jsonl, not_recorded, official, ours, sonnet_cost

CALLS = [Call(), Call(input=3000, output=800, cache_read=0, cache_write=0), Call(output=50)]
RECORDED_COST = sum(sonnet_cost(c) for c in CALLS)


def result(fields: dict, seconds: float | None = 42.5) -> dict:
    base = {"instance_id": "math.task_1__seed42", "task_id": "math.task_1", "prompt_level": "b1",
            "execution_time_seconds": seconds,
            "provenance": {"agent": {"agent_name": "claude-code", "config": {"model": MODEL}}},
            "agent_output": {"status": "completed"}}
    base["agent_output"].update(fields.get("agent_output", {}))
    return {**base, **{k: v for k, v in fields.items() if k != "agent_output"}}


def usage_of(fields: dict, **kwargs) -> dict:
    return result_usage(result(fields, **kwargs), price_table())


# --- the price table ------------------------------------------------------------------------------

def test_every_price_in_the_repository_table_has_its_date_and_source():
    table = price_table()
    assert table.prices and PRICE_TABLE.is_file()
    for price in table.prices:
        assert isinstance(price.as_of, date) and price.as_of <= date.today()
        assert price.source.startswith("https://") and price.input >= 0 and price.output >= 0


def test_a_model_is_found_by_id_alias_or_with_a_provider_prefix_and_never_guessed():
    table = price_table()
    assert table.find("claude-sonnet-4-5").model == "claude-sonnet-4-5"
    assert table.find("Claude-Sonnet-4-5-20250929").model == "claude-sonnet-4-5"
    assert table.find("anthropic/claude-sonnet-4-5").model == "claude-sonnet-4-5"
    assert table.find("claude-sonnet-4-5-20990101") is None  # an unlisted snapshot is not the listed one
    assert table.find("my-finetune") is None and table.find("") is None and table.find(None) is None


def test_a_calls_cost_counts_cache_tokens_and_the_long_prompt_price():
    sonnet = price_table().find("claude-sonnet-4-5")
    assert math.isclose(PriceTable.call_cost(sonnet, input_tokens=1000, output_tokens=200, cache_read_tokens=5000,
                                             cache_write_tokens=2000), sonnet_cost(Call()))
    # Past 200k prompt tokens the whole call is billed at the long-context price.
    assert math.isclose(PriceTable.call_cost(sonnet, input_tokens=250_000, output_tokens=1000),
                        (250_000 * 6.0 + 1000 * 22.5) / 1e6)
    gpt = price_table().find("gpt-5")
    assert PriceTable.call_cost(gpt, input_tokens=10, output_tokens=10, cache_read_tokens=5) is None  # no cache price


@pytest.mark.parametrize(("text", "message"), [
    ('[[price]]\nmodel = "m"\ninput = 1\noutput = 2\nsource = "https://x.example"\n', "as_of must be the date"),
    ('[[price]]\nmodel = "m"\ninput = 1\noutput = 2\nas_of = 2025-01-01\nsource = "http://x.example"\n',
     "source must be the https://"),
    ('[[price]]\nmodel = "m"\ninput = -1\noutput = 2\nas_of = 2025-01-01\nsource = "https://x.example"\n',
     "input must be a non-negative number"),
    ('[[price]]\nmodel = "m"\ninput = 1\noutput = true\nas_of = 2025-01-01\nsource = "https://x.example"\n',
     "output must be a non-negative number"),
    ('[[price]]\nmodel = "m"\ninput = 1\noutput = 2\nas_of = 2025-01-01\nsource = "https://x.example"\n'
     'above_tokens = 5\n', "go together"),
    ('[[price]]\nmodel = "m"\ninput = 1\noutput = 2\nas_of = 2025-01-01\nsource = "https://x.example"\nprice = 3\n',
     "unknown key(s) price"),
    ('[[price]]\nmodel = "m"\ninput = 1\noutput = 2\nas_of = 2025-01-01\nsource = "https://x.example"\n'
     '[[price]]\nmodel = "n"\naliases = ["M"]\ninput = 1\noutput = 2\nas_of = 2025-01-01\nsource = "https://x.example"\n',
     "'M' is already priced by m"),
    ("model = ", "not valid TOML"),
])
def test_a_malformed_table_is_refused_with_what_is_wrong(text, message):
    with pytest.raises(PriceTableError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_price_table(text)


# --- one result --------------------------------------------------------------------------------------

def test_our_clients_recorded_calls_give_tokens_calls_and_a_priced_cost():
    usage = usage_of(ours(claude_jsonl(CALLS), "b"))
    prompt = sum(c.input + c.cache_read + c.cache_write for c in CALLS)
    assert usage["input_tokens"] == {"trajectory": prompt, "self_reported": sum(c.input for c in CALLS)}
    assert usage["output_tokens"]["trajectory"] == sum(c.output for c in CALLS)
    assert usage["model_calls"]["trajectory"] == 3
    assert usage["turns"]["trajectory"] == 3 and usage["tool_calls"]["trajectory"] == 3
    assert usage["wall_seconds"]["trajectory"] == 42.5
    assert math.isclose(usage["cost_usd"]["trajectory"], RECORDED_COST)
    assert usage["cost_usd"]["self_reported"] is None  # the agent stated no cost
    assert [p["model"] for p in usage["prices"]] == ["claude-sonnet-4-5"]
    assert usage["prices"][0]["as_of"] == "2025-11-15" and usage["prices"][0]["source"].startswith("https://")


def test_the_agents_own_cost_statement_is_self_reported_beside_the_recorded_one():
    usage = usage_of(ours(claude_jsonl(CALLS, stated_usd=0.123), "b"))
    assert usage["cost_usd"] == {"trajectory": pytest.approx(RECORDED_COST), "self_reported": 0.123}


def test_a_cost_the_call_record_carries_is_used_as_it_is():
    fields = ours(claude_jsonl(CALLS), "b")
    for record in fields["agent_output"]["model_call_records"]:
        record["cost_usd"] = 0.5
    usage = usage_of(fields)
    assert usage["cost_usd"]["trajectory"] == 1.5 and usage["prices"] == []


def test_a_call_of_an_unlisted_model_leaves_the_cost_unknown_but_not_the_tokens():
    fields = ours(claude_jsonl([Call(), Call(model="my-private-finetune")]), "b")
    usage = usage_of(fields)
    assert usage["cost_usd"]["trajectory"] is None and usage["prices"] == []
    assert usage["output_tokens"]["trajectory"] == 400


def test_a_call_record_without_a_model_is_priced_as_the_runs_configured_model():
    fields = ours(claude_jsonl(CALLS), "b")
    for record in fields["agent_output"]["model_call_records"]:
        record["model"] = None
    assert math.isclose(usage_of(fields)["cost_usd"]["trajectory"], RECORDED_COST)


def test_a_gap_in_the_records_makes_the_calls_unknown_and_falls_back_to_the_statement():
    jsonl = claude_jsonl(CALLS, stated_usd=0.2)
    fields = ours(jsonl.replace('{"type": "user"', 'not json\n{"type": "user"', 1), "b")
    assert fields["agent_output"]["model_call_records"][-1]["attempted"] is None
    usage = usage_of(fields)
    assert usage["model_calls"]["trajectory"] is None and usage["cost_usd"]["trajectory"] is None
    assert usage["cost_usd"]["self_reported"] == 0.2 and usage["input_tokens"]["self_reported"] == 5000


def test_the_official_clients_result_gives_calls_from_its_summary_and_self_reported_tokens():
    usage = usage_of(official(claude_jsonl(CALLS), "b"))
    assert usage["model_calls"] == {"trajectory": 3, "self_reported": None}  # the client's count of calls
    assert usage["input_tokens"] == {"trajectory": None, "self_reported": 5000}
    assert usage["output_tokens"] == {"trajectory": None, "self_reported": 1050}
    # Its `estimated_cost_usd` is CostInfo's default 0.0: unknown, not free.
    assert usage["cost_usd"] == {"trajectory": None, "self_reported": None}


def test_a_result_that_records_no_calls_is_unknown_apart_from_its_wall_time():
    usage = usage_of(not_recorded())
    for name in FIGURES:
        expected = {"trajectory": 42.5, "self_reported": None} if name == "wall_seconds" else \
            {"trajectory": None, "self_reported": None}
        assert usage[name] == expected, name


@pytest.mark.parametrize("bad", [True, -5, 1.5, "100", float("nan"), 10**15, None, [], {}])
def test_hostile_numbers_are_unknown_never_zero(bad):
    fields = ours(claude_jsonl(CALLS), "b")
    fields["agent_output"]["model_call_records"][0]["output_tokens"] = bad
    fields["cost"] = {"input_tokens": bad, "output_tokens": bad, "estimated_cost_usd": bad}
    fields["agent_output"]["trajectory_summary"] = {"total_turns": bad, "total_tool_calls": bad}
    usage = usage_of(fields, seconds=bad)
    assert usage["output_tokens"] == {"trajectory": None, "self_reported": None}
    assert usage["turns"]["trajectory"] is None
    assert usage["wall_seconds"]["trajectory"] == (1.5 if bad == 1.5 else None)  # a fraction of a second is time
    # The calls are still counted; the unreadable record makes the tokens unknown, and its price with them.
    assert usage["model_calls"]["trajectory"] == 3 and usage["cost_usd"]["trajectory"] is None


@pytest.mark.parametrize("records", ["many", {"a": 1}, [1, 2], [{"attempted": "yes"}]])
def test_records_that_are_not_a_list_of_records_give_no_recorded_figures(records):
    usage = usage_of({"agent_output": {"model_call_records": records}})
    assert usage["input_tokens"]["trajectory"] is None and usage["cost_usd"]["trajectory"] is None


def test_too_many_records_are_not_summed(monkeypatch):
    monkeypatch.setattr("portal.submissions.usage.MAX_CALL_RECORDS", 2)
    usage = usage_of(ours(claude_jsonl(CALLS, stated_usd=0.3), "b"))
    assert usage["records_capped"] and usage["model_calls"]["trajectory"] is None
    assert usage["cost_usd"] == {"trajectory": None, "self_reported": 0.3}


# --- one run ----------------------------------------------------------------------------------------------

def test_a_runs_figures_say_their_coverage_and_their_weakest_source():
    recorded = usage_of(ours(claude_jsonl(CALLS), "a"))
    stated = usage_of(official(claude_jsonl(CALLS), "b"))
    nothing = usage_of(not_recorded(), seconds=None)
    run = run_usage([recorded, recorded, stated, nothing])
    figures = run["figures"]
    assert run["results"] == 4
    assert figures["cost_usd"] == {"total": round(2 * RECORDED_COST, 6), "per_result": round(RECORDED_COST, 6),
                                   "results": 2, "source": "trajectory"}
    assert figures["output_tokens"]["source"] == "self-reported" and figures["output_tokens"]["results"] == 3
    assert figures["model_calls"] == {"total": 9, "per_result": 3, "results": 3, "source": "trajectory"}
    assert figures["wall_seconds"] == {"total": 127.5, "per_result": 42.5, "results": 3, "source": "trajectory"}
    assert [p["model"] for p in run["prices"]] == ["claude-sonnet-4-5"]
    empty = run_usage([nothing])["figures"]["cost_usd"]
    assert empty == {"total": None, "per_result": None, "results": 0, "source": "unknown"}


def test_the_comparison_sums_only_results_with_both_figures():
    honest = usage_of(ours(claude_jsonl(CALLS, stated_usd=RECORDED_COST), "a"))
    inflated = usage_of(ours(claude_jsonl(CALLS, stated_usd=10 * RECORDED_COST, stated_scale=10), "b"))
    silent = usage_of(ours(claude_jsonl(CALLS), "c"))
    assert discrepancy(run_usage([honest, silent])["compared"]["cost_usd"]) == pytest.approx(0.0)
    compared = run_usage([honest, inflated, silent])["compared"]
    assert compared["cost_usd"]["results"] == 2
    assert discrepancy(compared["cost_usd"]) == pytest.approx(4.5)
    assert discrepancy(run_usage([silent])["compared"]["cost_usd"]) is None
