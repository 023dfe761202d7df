"""`asibench run` records the model calls an agent's `_trajectory.jsonl` shows (contract §5.8), as the official
client records its adapters' calls, and what the agent says they cost; the Portal prices and keeps them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client

from tests.cli.test_run_trajectory import run_agent
from tests.leaderboard.factories import make_catalog
from tests.portal.submissions.test_agent_evidence import upload
from tests.results_tree import write_result
from tests.usage_bundles import Call, claude_jsonl, sonnet_cost

pytestmark = pytest.mark.slow

CALLS = [Call(), Call(input=2500, output=600, cache_read=8000, cache_write=0), Call(output=40)]
AGENT = '''
import json, sys
open("_trajectory.jsonl", "w").write(JSONL)
open("constants.py", "w").write("G = 6.674\\n")
'''


def agent(jsonl: str) -> str:
    return AGENT.replace("JSONL", repr(jsonl))


def test_the_run_records_each_call_its_summary_and_the_agents_stated_cost(tmp_path: Path) -> None:
    result = run_agent(tmp_path, agent(claude_jsonl(CALLS, stated_usd=0.25)))
    output = result["agent_output"]
    records = output["model_call_records"]
    assert [(r["call_index"], r["attempted"], r["model"], r["input_tokens"], r["output_tokens"],
             r["cache_read_tokens"], r["cache_write_tokens"]) for r in records] == [
        (n, True, "claude-sonnet-4-5-20250929", c.input, c.output, c.cache_read, c.cache_write)
        for n, c in enumerate(CALLS, 1)]
    observability = output["model_call_observability"]
    assert observability["capture_status"] == "captured" and observability["summary"]["calls_attempted"] == 3
    sidecar = tmp_path / "out" / "demo.traj" / observability["records_file"]
    assert json.loads(sidecar.read_text()) == records
    assert result["cost"] == {"input_tokens": 4500, "output_tokens": 840, "total_tokens": 5340,
                              "estimated_cost_usd": 0.25}


def test_one_message_written_as_several_events_is_one_call_billed_once(tmp_path: Path) -> None:
    lines = claude_jsonl([Call()]).splitlines()
    event = json.loads(lines[1])
    text_only = {**event, "message": {**event["message"], "content": [event["message"]["content"][0]]}}
    tool_only = {**event, "message": {**event["message"], "content": [event["message"]["content"][1]]}}
    jsonl = "\n".join([lines[0], json.dumps(text_only), json.dumps(tool_only), *lines[2:]]) + "\n"
    records = run_agent(tmp_path, agent(jsonl))["agent_output"]["model_call_records"]
    assert len(records) == 1 and records[0]["output_tokens"] == 200 and records[0]["content_state"] == "nonempty"


def test_an_agent_without_a_trajectory_records_no_calls_and_no_cost(tmp_path: Path) -> None:
    result = run_agent(tmp_path, "open('constants.py', 'w').write('x = 1\\n')\n")
    assert result["agent_output"]["model_call_observability"]["capture_status"] == "not_supported"
    assert "model_call_records" not in result["agent_output"] and "cost" not in result


@pytest.mark.django_db
def test_the_portal_prices_what_the_run_recorded(tmp_path: Path, submitter) -> None:
    ran = run_agent(tmp_path, agent(claude_jsonl(CALLS)))
    make_catalog({"math": 1})
    results = tmp_path / "results"
    for level in ("b1", "b2", "b3", "b4"):
        base = write_result(results, "math.task_1__seed42", level, {"result.json": b"{}", "curve.npy": b"x"})
        path = results / "math.task_1" / f"{base}.json"
        data = json.loads(path.read_text())
        data["agent_output"].update({k: v for k, v in ran["agent_output"].items()
                                     if k in ("model_call_records", "model_call_observability", "trajectory_summary")})
        data["cost"] = ran["cost"]
        path.write_text(json.dumps(data))
    run = upload(Client(), submitter.user, results, tmp_path)
    cost = run.usage["figures"]["cost_usd"]
    assert cost["source"] == "trajectory" and cost["per_result"] == pytest.approx(sum(map(sonnet_cost, CALLS)))
    assert run.usage["figures"]["model_calls"]["per_result"] == 3
    assert not [flag for flag in run.conformance if flag["kind"] == "usage_mismatch"]
