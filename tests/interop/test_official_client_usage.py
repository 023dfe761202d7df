"""What the official 0.2.0 client records of a run's model calls, read by this Portal; and our client's records
of the same agent log, checked against the official parser and summary.

The agent is a stand-in for Claude Code on PATH (`claude`): it writes the task's outputs and prints the
stream-json events the real CLI prints, with per-call `usage` and a final `result` event stating its totals and
cost. The official client runs it through its own `claude_code_cli` adapter, unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

from contracts.bundle import build_bundle
from scoring.engine import instance_id_for_seed, load_task, sample_params
from tests.leaderboard.factories import make_catalog
from tests.portal.submissions.test_agent_evidence import upload
from tests.results_tree import OS_SANDBOX
from tests.support import REPO, run_cli, strip_ansi
from tests.usage_bundles import Call, claude_jsonl

TASK = "math.homotopy_poly_roots"
OUTPUTS = ("roots.npy", "multiplicities.npy", "path_counts.npy")
CALLS = [Call(), Call(input=3000, output=700, cache_read=0, cache_write=0)]
FAKE_CLAUDE = f'''#!{sys.executable}
import sys
if "--version" in sys.argv:
    print("2.0.0 (Claude Code)")
    sys.exit(0)
sys.stdin.read()
for name in {OUTPUTS!r}:
    open(name, "wb").write(b"not an array")
sys.stdout.write({claude_jsonl(CALLS, stated_usd=0.5)!r})
'''


@pytest.fixture
def official_results(official_client, tmp_path) -> Path:
    """An official `asibench run --agent claude_code_cli` of one seed42 instance, b1 and b2."""
    task_dir = REPO / "tasks" / TASK.replace(".", "/", 1)
    instance = tmp_path / "instances" / instance_id_for_seed(TASK, 42)
    subprocess.run([sys.executable, str(task_dir / "generate_gt.py"), "--output-dir", str(instance), "--params",
                    json.dumps(sample_params(load_task(task_dir), 42))], check=True, cwd=task_dir,
                   capture_output=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text(FAKE_CLAUDE)
    (bin_dir / "claude").chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HOME": str(tmp_path / "home"), "LANG": "C.UTF-8"}
    out = tmp_path / "out"
    done = run_cli([str(official_client), "run", "--instances-dir", str(instance.parent), "--tasks-dir",
                    str(REPO / "tasks"), "--tasks", TASK, "--agent", "claude_code_cli", "--sandbox", "none",
                    "--prompt-levels", "b1,b2", "--output-dir", str(out),
                    "--agent-config", '{"model": "claude-sonnet-4-5"}'], env, timeout=600)
    assert done.returncode == 0, strip_ansi(done.stdout + done.stderr)
    return out


def test_the_official_clients_call_records_reach_the_portal_as_its_bundle_carries_them(
        official_results, catalog, submitter, tmp_path):
    results = sorted((official_results / TASK).glob(f"{TASK}__seed42__b?.json"))
    assert len(results) == 2
    data = json.loads(results[0].read_text())
    # What the official client writes: the agent's own totals (tokens only, its cost left at 0.0), the call summary,
    # and the records themselves in a sidecar file next to the result.
    assert data["cost"] == {"input_tokens": 4000, "output_tokens": 900, "total_tokens": 4900,
                            "estimated_cost_usd": 0.0}
    observability = data["agent_output"]["model_call_observability"]
    assert observability["capture_status"] == "captured" and observability["summary"]["calls_attempted"] == 2
    sidecar = json.loads((results[0].parent / observability["records_file"]).read_text())
    assert [(r["input_tokens"], r["output_tokens"], r["cost_usd"]) for r in sidecar] == [(1000, 200, None),
                                                                                         (3000, 700, None)]
    assert "model_call_records" not in data["agent_output"]

    # The bundle (the official layout, built as both clients build it) carries result.json only, not the sidecar.
    for path in results:
        stamped = json.loads(path.read_text())
        stamped["provenance"]["sandbox"] = OS_SANDBOX  # the official client submits only `--sandbox os` runs
        path.write_text(json.dumps(stamped))
    bundle = build_bundle(official_results, tmp_path / "bundle")
    assert not list(bundle.bundle_dir.rglob("*model_calls*"))
    run = upload(Client(), submitter.user, official_results, tmp_path)
    figures = run.usage["figures"]
    assert figures["model_calls"] == {"total": 4, "per_result": 2, "results": 2, "source": "trajectory"}
    assert figures["input_tokens"]["source"] == "self-reported" and figures["input_tokens"]["per_result"] == 4000
    assert figures["output_tokens"] == {"total": 1800, "per_result": 900, "results": 2, "source": "self-reported"}
    assert figures["cost_usd"]["source"] == "unknown"  # 0.0 there means "not estimated", never free
    assert figures["turns"]["per_result"] == 2 and figures["wall_seconds"]["source"] == "trajectory"


@pytest.fixture
def catalog(db: None) -> None:
    """seed42 with the task's instance, as intake reads it (no archives: nothing here is scored)."""
    from scoring.models import Instance, Task

    make_catalog({"math": 1})
    task = Task.objects.get(id="math.task_1")
    Task.objects.create(**{**{f.attname: getattr(task, f.attname) for f in Task._meta.concrete_fields},
                           "id": TASK, "declared_outputs": [{"name": name, "type": "data"} for name in OUTPUTS]})
    instance = Instance.objects.get(instance_id="math.task_1__seed42")
    Instance.objects.create(**{**{f.attname: getattr(instance, f.attname) for f in Instance._meta.concrete_fields},
                               "instance_id": f"{TASK}__seed42", "task_id": TASK})


OFFICIAL_PARSE = """
import json, sys
from ai4sci_bench.trajectory.call_observability import parse_claude_call_records, summarize_model_calls
records = parse_claude_call_records(open(sys.argv[1]).read(), instance_id="x", model="claude-sonnet-4-5")
print(json.dumps({"records": records, "summary": summarize_model_calls(records)}))
"""


@pytest.mark.parametrize("malformed", [False, True])
def test_our_records_of_an_agent_log_are_the_official_parsers_with_cache_tokens_read(
        official_client, tmp_path, malformed):
    from cli_client.running import trajectory

    jsonl = claude_jsonl(CALLS, stated_usd=0.5)
    if malformed:
        jsonl = jsonl.replace('{"type": "user"', 'not json\n{"type": "user"', 1)
    source = tmp_path / "agent.jsonl"
    source.write_text(jsonl)
    done = subprocess.run([str(official_client.parent / "python"), "-c", OFFICIAL_PARSE, str(source)],
                          capture_output=True, text=True, check=True)
    official = json.loads(done.stdout)
    ours = trajectory.model_call_records(jsonl, "claude-sonnet-4-5")
    assert trajectory.summarize_model_calls(ours) == official["summary"]
    for mine, theirs in zip(ours, official["records"], strict=True):
        for field in ("call_index", "attempted", "content_state", "outcome", "finish_reason", "input_tokens",
                      "output_tokens", "token_count", "cost_usd", "response_id", "evidence_status", "error_type"):
            assert mine.get(field) == theirs.get(field), (field, mine.get(field), theirs.get(field))
    if not malformed:
        # Anthropic's cache tokens: the official parser does not know their names; ours keeps them.
        assert [r["cache_read_tokens"] for r in official["records"]] == [None, None]
        assert [r["cache_read_tokens"] for r in ours] == [5000, 0]
        assert [r["model"] for r in ours] == ["claude-sonnet-4-5-20250929"] * 2
