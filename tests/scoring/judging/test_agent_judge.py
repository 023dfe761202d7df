"""agent_judge end to end with a stand-in CLI (tests/fake_judge_cli.py) on the search path: the contract's
workspace, score.json, and the isolation — no host files, no secrets but its own key, no network but its
endpoint — in the real bubblewrap sandbox."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.engine import score_instance
from scoring.judging.agent import agent_cli
from scoring.judging.client import JudgeUnavailable
from scoring.judging.local import answer_requests, score_with_judges
from tests.judge_endpoint import JudgeEndpoint
from tests.support import REPO

FAKE_CLI = REPO / "tests" / "fake_judge_cli.py"
HOST_SECRET_FILE = REPO / "README.md"


@pytest.fixture
def endpoint():  # noqa: ANN201
    with JudgeEndpoint() as server:
        yield server


@pytest.fixture
def cli_dir(tmp_path: Path) -> Path:
    """`codex` and `claude` on a directory of their own (the sandbox must see it: world-readable)."""
    bin_dir = tmp_path / "judge-bin"
    bin_dir.mkdir()
    for name in ("codex", "claude"):
        shutil.copyfile(FAKE_CLI, bin_dir / name)
        (bin_dir / name).chmod(0o755)
    bin_dir.chmod(0o755)
    return bin_dir


def environ(endpoint: JudgeEndpoint, cli_dir: Path, **extra: str) -> dict[str, str]:
    return {"ASIBENCH_AGENT_JUDGE_PATH": str(cli_dir), "ASIBENCH_AGENT_JUDGE_CODEX_BASE_URL": endpoint.url + "/v1",
            "ASIBENCH_AGENT_JUDGE_CLAUDE_BASE_URL": endpoint.url, "OPENAI_API_KEY": "sk-codex-own-key",
            "ANTHROPIC_API_KEY": "sk-claude-own-key", "ASIBENCH_JUDGE_API_KEY_ENV": "OTHER_SECRET",
            "OTHER_SECRET": "sk-other-never-seen", **extra}


def agent_task(make_task, rubric: str, agent: str = "codex", **config: object) -> Path:
    evaluation = {"scoring": [{"scorer": "agent_judge", "weight": 10,
                               "config": {"agent": agent, "rubric": rubric, "num_judges": 3, "timeout": 60,
                                          **config}}]}
    return make_task(evaluation, name=f"agent_{agent}")


def engine(task: Path, pred: Path, ref: Path):  # noqa: ANN201
    return lambda book: score_instance(task, pred, ref, {}, "b1", book)


def test_the_codex_judge_scores_from_score_json_and_sees_only_its_workspace(make_task, dirs, endpoint, cli_dir):
    pred, ref = dirs
    (pred / "report.md").write_text("JUDGE-SCRIPT:seq:6,8,7 the analysis")
    port = endpoint.server.server_address[1]
    rubric = "\n".join(["PROBE-FILE agent_output/report.md", "PROBE-FILE reference/placeholder_ref.txt",
                        "PROBE-FILE JUDGE_INSTRUCTIONS.md", f"PROBE-FILE {HOST_SECRET_FILE}", "PROBE-FILE /etc/shadow",
                        f"PROBE-FILE {ref / 'placeholder_ref.txt'}",
                        f"PROBE-CONNECT 127.0.0.1:{port}", "PROBE-CONNECT 10.255.255.1:80",
                        "PROBE-PROXY http://example.org/", f"PROBE-PROXY http://127.0.0.1:{port + 1}/", "Judge it."])
    task = agent_task(make_task, rubric)
    result = score_with_judges(engine(task, pred, ref), pred_dir=pred, ref_dir=ref,
                               environ=environ(endpoint, cli_dir))
    assert result["evaluation_status"] == "completed", result.get("error")
    detail = result["score_results"][0]
    assert detail["details"]["score_sources"] == ["score.json"] * 3
    assert sorted(detail["details"]["individual_scores"]) == [6.0, 7.0, 8.0]
    assert detail["score"] == 7.0 and detail["details"]["reasonings"][0].startswith("scripted")
    observed = json.loads(detail["details"]["raw_responses"][0].splitlines()[0])["observed"]
    assert observed["argv0"] == "codex" and observed["args"][:4] == ["exec", "--model", "gpt-5.6-sol", "--cd"]
    assert observed["args"][-2:] == ["--", "Read JUDGE_INSTRUCTIONS.md and follow the instructions exactly."]
    # No host files: neither the project, nor the host's /etc, nor the original reference (only its copy).
    workspace = ["agent_output/report.md", "reference/placeholder_ref.txt", "JUDGE_INSTRUCTIONS.md"]
    assert [observed["files"].pop(name) for name in workspace] == ["read"] * 3
    assert set(observed["files"].values()) == {"FileNotFoundError"}
    # Its own key and endpoint, nothing else secret.
    assert {"OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL"} <= set(observed["env"])
    assert not {"ANTHROPIC_API_KEY", "OTHER_SECRET", "ASIBENCH_JUDGE_API_KEY_ENV"} & set(observed["env"])
    # No network but loopback; the proxy reaches the endpoint and refuses every other host.
    assert set(observed["connect"].values()) <= {"ConnectionRefusedError", "OSError", "TimeoutError"}
    assert observed["proxy"] == {"http://example.org/": 403, f"http://127.0.0.1:{port + 1}/": 403}
    calls = [r for r in endpoint.requests if r["path"] == "/v1/chat/completions"]
    assert len(calls) == 3 and {r["headers"]["authorization"] for r in calls} == {"Bearer sk-codex-own-key"}


def test_the_claude_judge_gets_the_prompt_on_stdin_and_its_own_key(make_task, dirs, endpoint, cli_dir):
    pred, ref = dirs
    (pred / "report.md").write_text("JUDGE-SCRIPT:well:9")
    task = agent_task(make_task, "Judge it.", agent="claude_code", tool_mode="restricted", num_judges=1)
    result = score_with_judges(engine(task, pred, ref), pred_dir=pred, ref_dir=ref,
                               environ=environ(endpoint, cli_dir))
    detail = result["score_results"][0]
    assert detail["score"] == 9.0 and detail["details"]["model"] == "claude_code/claude-opus-4-6"
    observed = json.loads(detail["details"]["raw_responses"][0].splitlines()[0])["observed"]
    assert observed["argv0"] == "claude" and "--tools" in observed["args"] and "--strict-mcp-config" in observed["args"]
    assert observed["stdin"] == "Read JUDGE_INSTRUCTIONS.md and follow the instructions exactly."
    assert "ANTHROPIC_API_KEY" in observed["env"] and "OPENAI_API_KEY" not in observed["env"]
    assert endpoint.requests[-1]["path"] == "/v1/messages"


def test_a_judge_that_prints_its_verdict_is_read_from_stdout_and_one_that_overruns_times_out(
        make_task, dirs, endpoint, cli_dir):
    pred, ref = dirs
    (pred / "report.md").write_text("JUDGE-SCRIPT:fenced:4")
    task = agent_task(make_task, "NO-SCORE-FILE", num_judges=1)
    detail = score_with_judges(engine(task, pred, ref), pred_dir=pred, ref_dir=ref,
                               environ=environ(endpoint, cli_dir))["score_results"][0]
    assert (detail["details"]["score_sources"], detail["score"]) == (["stdout_parse"], 4.0)
    pending = score_instance(agent_task(make_task, "SLEEP 30", agent="claude_code", num_judges=1), pred, ref, {}, "b1")
    request = {**pending["judge_requests"][0], "timeout": 2}
    replies, errors = answer_requests([request], client=None, pred_dir=pred, ref_dir=ref,  # type: ignore[arg-type]
                                      environ=environ(endpoint, cli_dir))
    assert errors == [] and replies[request["key"]]["0"]["outcome"] == "timeout"


def test_a_missing_cli_or_key_is_unavailable_with_the_reason(cli_dir, tmp_path) -> None:
    with pytest.raises(JudgeUnavailable, match="the codex CLI .* is not installed"):
        agent_cli("codex", search_path=str(tmp_path), base_urls={"codex": "https://api.openai.com/v1"},
                  key_envs={"codex": "OPENAI_API_KEY"}, environ={"OPENAI_API_KEY": "k"})
    with pytest.raises(JudgeUnavailable, match="OPENAI_API_KEY is unset"):
        agent_cli("codex", search_path=str(cli_dir), base_urls={"codex": "https://api.openai.com/v1"},
                  key_envs={"codex": "OPENAI_API_KEY"}, environ={})


def test_outputs_changed_since_the_scorer_listed_them_are_not_judged(make_task, dirs, endpoint, cli_dir):
    pred, ref = dirs
    (pred / "report.md").write_text("JUDGE-SCRIPT:well:9")
    pending = score_instance(agent_task(make_task, "Judge it.", num_judges=1), pred, ref, {}, "b1")
    (pred / "report.md").write_text("swapped after scoring")
    _, errors = answer_requests(pending["judge_requests"], client=None, pred_dir=pred, ref_dir=ref,  # type: ignore[arg-type]
                                environ=environ(endpoint, cli_dir))
    assert errors and "differ from the ones the scorer listed" in errors[0]
    assert endpoint.requests == []


def test_the_bridge_runs_with_the_standard_library_only() -> None:
    done = subprocess.run([sys.executable, "-S", "-I", "-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())",
                           str(REPO / "scoring" / "judging" / "egress_bridge.py")], capture_output=True, check=False)
    assert done.returncode == 0
    source = (REPO / "scoring" / "judging" / "egress_bridge.py").read_text()
    assert "from scoring" not in source and "import scoring" not in source
