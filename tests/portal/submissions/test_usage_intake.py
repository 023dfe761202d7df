"""Bundles from both clients with recorded calls, uploaded: each result keeps what it cost and took, the run its
totals with their sources, and a run whose self-reported cost the recorded calls do not bear out is flagged."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from portal.submissions.models import Submission
from tests.leaderboard.factories import make_catalog
from tests.portal.submissions.test_agent_evidence import upload
from tests.results_tree import write_result
from tests.usage_bundles import Call, claude_jsonl, merge_into, not_recorded, official, ours, sonnet_cost

pytestmark = pytest.mark.django_db

TASKS = ("math.task_1", "math.task_2")
LEVELS = ("b1", "b2", "b3", "b4")
CALLS = [Call(), Call(input=4000, output=900, cache_read=0, cache_write=0)]
PER_RESULT = sum(sonnet_cost(c) for c in CALLS)


@pytest.fixture
def catalog(db: None) -> dict:
    return make_catalog({"math": 2})


def results(root: Path, fields: Any, seconds: float = 30.0) -> Path:
    """Every task at every level, each result given `fields(base)`."""
    for task in TASKS:
        for level in LEVELS:
            base = write_result(root, f"{task}__seed42", level, {"result.json": b"{}", "curve.npy": b"\x93NUMPY"})
            merge_into(root / task / f"{base}.json", fields(base), seconds=seconds)
    return root


def uploaded(submitter, tmp_path: Path, fields: Any, name: str = "run") -> Submission:
    return upload(Client(), submitter.user, results(tmp_path / name, fields), tmp_path, name)


def flag_kinds(run: Submission) -> list[str]:
    return [flag["kind"] for flag in run.conformance]


def test_our_clients_recorded_calls_are_priced_and_kept_per_result_and_per_run(catalog, submitter, tmp_path):
    run = uploaded(submitter, tmp_path, lambda base: ours(claude_jsonl(CALLS), base))
    entry = run.entries.get(base_name="math.task_1__seed42__b3")
    assert entry.usage["model_calls"] == {"trajectory": 2, "self_reported": None}
    assert entry.usage["cost_usd"]["trajectory"] == pytest.approx(PER_RESULT)
    figures = run.usage["figures"]
    assert run.usage["results"] == 8
    assert figures["cost_usd"] == {"total": round(8 * PER_RESULT, 6), "per_result": round(PER_RESULT, 6),
                                   "results": 8, "source": "trajectory"}
    assert figures["input_tokens"]["per_result"] == 1000 + 5000 + 2000 + 4000
    assert figures["output_tokens"]["per_result"] == 1100 and figures["wall_seconds"]["per_result"] == 30.0
    assert figures["turns"] == {"total": 16, "per_result": 2, "results": 8, "source": "trajectory"}
    assert [p["model"] for p in run.usage["prices"]] == ["claude-sonnet-4-5"]
    assert "usage_mismatch" not in flag_kinds(run)


def test_an_honest_self_report_raises_no_flag(catalog, submitter, tmp_path):
    run = uploaded(submitter, tmp_path, lambda base: ours(claude_jsonl(CALLS, stated_usd=PER_RESULT * 1.1), base))
    assert run.usage["compared"]["cost_usd"]["results"] == 8
    assert "usage_mismatch" not in flag_kinds(run)


def test_an_inflated_self_report_is_flagged_for_reviewers_and_the_board_keeps_the_recorded_figure(
        catalog, submitter, tmp_path):
    run = uploaded(submitter, tmp_path,
                   lambda base: ours(claude_jsonl(CALLS, stated_usd=PER_RESULT * 10, stated_scale=10), base))
    flag = next(f for f in run.conformance if f["kind"] == "usage_mismatch")
    assert flag["label"] == "self-reported cost or tokens differ from the recorded calls"
    assert "self-reported cost $" in flag["detail"] and "over 8 result(s) (900% off)" in flag["detail"]
    assert "self-reported output tokens 88,000 against 8,800" in flag["detail"]
    assert run.usage["figures"]["cost_usd"]["source"] == "trajectory"
    assert run.usage["figures"]["cost_usd"]["per_result"] == round(PER_RESULT, 6)


def test_a_self_report_just_inside_the_limit_is_not_flagged_and_one_past_it_is(catalog, submitter, tmp_path, settings):
    inside = uploaded(submitter, tmp_path, lambda base: ours(claude_jsonl(CALLS, stated_usd=PER_RESULT * 1.19), base),
                      "inside")
    past = uploaded(submitter, tmp_path, lambda base: ours(claude_jsonl(CALLS, stated_usd=PER_RESULT * 0.79), base),
                    "past")
    assert "usage_mismatch" not in flag_kinds(inside)
    assert "usage_mismatch" in flag_kinds(past)
    settings.USAGE_MISMATCH_PERCENT = 25
    again = uploaded(submitter, tmp_path, lambda base: ours(claude_jsonl(CALLS, stated_usd=PER_RESULT * 0.78), base),
                     "again")
    assert "usage_mismatch" not in flag_kinds(again)


def test_the_official_clients_bundle_gives_self_reported_tokens_its_call_count_and_an_unknown_cost(
        catalog, submitter, tmp_path):
    run = uploaded(submitter, tmp_path, lambda base: official(claude_jsonl(CALLS), base))
    figures = run.usage["figures"]
    assert figures["model_calls"] == {"total": 16, "per_result": 2, "results": 8, "source": "trajectory"}
    assert figures["input_tokens"] == {"total": 40_000, "per_result": 5000, "results": 8, "source": "self-reported"}
    assert figures["cost_usd"] == {"total": None, "per_result": None, "results": 0, "source": "unknown"}
    assert "usage_mismatch" not in flag_kinds(run)  # nothing recorded to compare with


def test_a_bundle_without_recorded_calls_keeps_its_figures_unknown(catalog, submitter, tmp_path):
    run = uploaded(submitter, tmp_path, lambda base: not_recorded())
    figures = run.usage["figures"]
    for name in ("input_tokens", "output_tokens", "model_calls", "turns", "tool_calls", "cost_usd"):
        assert figures[name]["source"] == "unknown" and figures[name]["total"] is None, name
    assert figures["wall_seconds"]["per_result"] == 30.0


def test_a_mix_of_recorded_and_unrecorded_results_says_how_many_it_covers(catalog, submitter, tmp_path):
    def fields(base: str) -> dict:
        return ours(claude_jsonl(CALLS), base) if "__b1" in base or "__b2" in base else not_recorded()

    run = uploaded(submitter, tmp_path, fields)
    cost = run.usage["figures"]["cost_usd"]
    assert (cost["results"], cost["per_result"], cost["source"]) == (4, round(PER_RESULT, 6), "trajectory")


def test_the_owner_reads_the_runs_figures_and_each_results_with_what_it_stated(catalog, submitter, tmp_path, client):
    run = uploaded(submitter, tmp_path,
                   lambda base: ours(claude_jsonl(CALLS, stated_usd=PER_RESULT * 10, stated_scale=10), base))
    client.force_login(submitter.user)
    page = client.get(f"/submit/submissions/{run.id}").content.decode()
    table = page[page.index('data-testid="run-usage"'):]
    cost = table[table.index('data-testid="usage-cost_usd"'):]
    assert "trajectory" in cost[:cost.index("</tr>")] and "8 of 8" in cost[:cost.index("</tr>")]
    line = page[page.index('data-testid="evidence-usage"'):]
    line = line[:line.index("</dd>")]
    assert "Model calls 2 <small class=\"source\">trajectory</small>" in line
    assert re.search(r"Cost \$0\.04\d <small", line) and "(stated $0.40)" in line  # $0.0405 either way
    assert "usage_mismatch" not in page  # reviewers' flags are not the owner's page


def test_the_reviewer_sees_the_mismatch_flag_on_the_review_page(catalog, submitter, maintainer, tmp_path, client):
    run = uploaded(submitter, tmp_path,
                   lambda base: ours(claude_jsonl(CALLS, stated_usd=PER_RESULT * 10, stated_scale=10), base))
    client.force_login(maintainer.user)
    page = client.get(f"/leaderboard/review/{run.id}/").content.decode()
    assert 'data-testid="conformance-usage_mismatch"' in page
    assert "self-reported cost or tokens differ from the recorded calls" in page
    queue = client.get("/leaderboard/review/?tab=all").content.decode()
    assert "self-reported cost or tokens differ from the recorded calls" in queue  # the queue's legend words it
