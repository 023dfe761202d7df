"""`asibench run` records what the agent did: `_trajectory.jsonl` (contract §5.8) becomes `trajectory_summary`
and `file_versions` (§5.4), the declared outputs' final hashes join the file history, logs keep their tails."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_client.running.trajectory import LOG_TAIL_CHARS
from tests.cli.agent_runs import cli, synthetic_instance
from tests.support import cli_env

pytestmark = pytest.mark.slow

AGENT = r'''
import json, sys
ws = sys.argv[1]
events = [
    {"type": "assistant", "timestamp": 1.5, "message": {"content": [
        {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "I will write constants"},
        {"type": "tool_use", "id": "t1", "name": "Write",
         "input": {"file_path": ws + "/constants.py", "content": "G = 6.67\n"}}]}},
    {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}},
    {"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "python constants.py"}}]}},
    {"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t2", "is_error": True, "content": "boom"}]}},
    {"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "t3", "name": "Edit",
         "input": {"file_path": ws + "/constants.py", "old_string": "6.67", "new_string": "6.674"}}]}},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "done"}]}},
]
with open("_trajectory.jsonl", "w") as f:
    f.write("\n".join(json.dumps(e) for e in events) + "\nnot json\n")
with open("constants.py", "w") as f:
    f.write("G = 6.674\n")
sys.stdout.write("s" * (LOG + 10) + "STDOUT-END\n")
sys.stderr.write("warning: something\n")
'''


def run_agent(tmp_path: Path, script: str, *args: str) -> dict:
    instances = tmp_path / "instances"
    synthetic_instance(instances, "demo.traj", ["constants.py"])
    agent = tmp_path / "agent.py"
    agent.write_text(script.replace("LOG", str(LOG_TAIL_CHARS)))
    out = tmp_path / "out"
    command = " ".join([sys.executable, str(agent), "{workspace}", *args])
    done = cli(["run", "--instances-dir", str(instances), "--agent-cmd", command,
                "--prompt-levels", "b1", "--output-dir", str(out)], cli_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    return json.loads((out / "demo.traj" / "demo.traj__seed31415__b1.json").read_text())


def test_the_agents_trajectory_becomes_the_official_summary_and_file_history(tmp_path: Path) -> None:
    output = run_agent(tmp_path, AGENT)["agent_output"]
    # Turns as the official extractor counts them: text replies, and a marker for each assistant event
    # that only called tools.
    assert output["trajectory_summary"] == {
        "total_turns": 4, "total_tool_calls": 3, "tool_call_distribution": {"Write": 1, "Bash": 1, "Edit": 1},
        "thinking_total_chars": 3, "total_code_executions": 1, "code_execution_failures": 1,
        "unique_files_modified": ["constants.py"]}
    final = hashlib.sha256(b"G = 6.674\n").hexdigest()
    assert output["file_versions"] == {"constants.py": [
        {"version": 1, "action": "write", "step_index": 0, "timestamp_ms": 1500,
         "content_hash": hashlib.sha256(b"G = 6.67\n").hexdigest()[:16], "content_length": 9, "diff_summary": None},
        {"version": 2, "action": "edit", "step_index": 4, "timestamp_ms": None,
         "content_hash": hashlib.sha256(b"6.67|6.674").hexdigest()[:16], "content_length": 5,
         "diff_summary": "'6.67' → '6.674'"},
        {"version": 3, "action": "final", "step_index": None, "timestamp_ms": None, "content_hash": final[:16],
         "content_length": 10, "diff_summary": None}]}


def test_the_log_keeps_the_tail_of_stdout_and_stderr(tmp_path: Path) -> None:
    result = run_agent(tmp_path, AGENT)
    log = result["agent_output"]["log"]
    assert log.startswith("[… 21 earlier characters are in the raw log file]\n")
    assert "STDOUT-END" in log and log.endswith("[stderr]\nwarning: something")
    assert len(log) < LOG_TAIL_CHARS + 200


def test_without_a_trajectory_only_the_final_outputs_are_recorded(tmp_path: Path) -> None:
    output = run_agent(tmp_path, "open('constants.py', 'w').write('x = 1\\n')\n")["agent_output"]
    assert "trajectory_summary" not in output
    assert output["file_versions"] == {"constants.py": [
        {"version": 1, "action": "final", "step_index": None, "timestamp_ms": None,
         "content_hash": hashlib.sha256(b"x = 1\n").hexdigest()[:16], "content_length": 6, "diff_summary": None}]}


# --- the same records as the official 0.2.0 client makes of the same trajectory -------------------

RICH_AGENT = r'''
import json, sys
ws = sys.argv[1]
events = [
    {"type": "system", "subtype": "init", "message": "session started"},
    {"type": "assistant", "timestamp": 1.5, "message": {"content": [
        {"type": "thinking", "thinking": "let me think"}, {"type": "text", "text": "writing constants"},
        {"type": "tool_use", "id": "t1", "name": "Write",
         "input": {"file_path": ws + "/constants.py", "content": "G = 6.67\n"}}]}},
    {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}},
    {"type": "assistant", "timestamp": "2.25", "message": {"content": [
        {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "python constants.py"}}]}},
    {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "is_error": True,
        "content": [{"type": "text", "text": "Traceback: boom"},
                    {"type": "image", "source": {"media_type": "image/png"}}]}]}},
    {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t3", "name": "Edit",
        "input": {"file_path": ws + "/constants.py", "old_string": "6.67", "new_string": "6.674"}}]}},
    {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t4", "name": "Write",
        "input": {"file_path": ws + "/notes/scratch.txt", "content": "draft"}}]}},
    {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t5", "name": "NotebookEdit",
        "input": {"notebook_path": ws + "/nb.ipynb", "new_source": "x = 1"}}]}},
    {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t6", "name": "Write",
        "input": {"file_path": "relative.txt", "content": "r"}}]}},
    {"type": "rate_limit_event", "message": "slow down"},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "done"}]}},
    {"type": "result", "subtype": "success", "num_turns": 5},
]
text = "\n".join(json.dumps(e) for e in events[:9]) + "\nnot json\n\n" + "\n".join(
    json.dumps(e) for e in events[9:]) + "\n"
open("_trajectory.jsonl", "w").write(text)
open(sys.argv[2], "w").write(json.dumps({"workspace": ws, "jsonl": text}))
open("constants.py", "w").write("G = 6.674\n")
'''

OFFICIAL_RECORDS = """
import json, sys
from ai4sci_bench.runner.orchestrator import BenchmarkOrchestrator as Orchestrator
from ai4sci_bench.trajectory.claude_extractor import extract_from_jsonl
from ai4sci_bench.trajectory.file_history import extract_file_versions
raw = json.load(open(sys.argv[1]))["jsonl"]
assert Orchestrator._detect_jsonl_trajectory_schema(raw) == "claude"  # the extractor the official run picks
trajectory = extract_from_jsonl(raw, "x")
print(json.dumps({"summary": trajectory.summary.to_dict(), "steps": [s.to_dict() for s in trajectory.steps],
                  "file_versions": extract_file_versions(raw)}))
"""


def test_the_records_are_the_official_clients_with_workspace_paths_relative(tmp_path: Path, official_client) -> None:
    copy = tmp_path / "seen.json"
    result = run_agent(tmp_path, RICH_AGENT, str(copy))
    output = result["agent_output"]
    done = subprocess.run([str(official_client.parent / "python"), "-c", OFFICIAL_RECORDS, str(copy)],
                          capture_output=True, text=True, check=True)
    official = json.loads(done.stdout)
    workspace = json.loads(copy.read_text())["workspace"]

    def relative(path: str) -> str:
        return path.removeprefix(workspace + "/")

    # The summary and the file history, key for key; paths inside the workspace relative in both.
    summary = official["summary"]
    assert summary["total_turns"] == 7 and len(summary["unique_files_modified"]) == 3
    assert output["trajectory_summary"] == {
        **summary, "unique_files_modified": sorted(relative(p) for p in summary["unique_files_modified"])}
    history = {relative(path): versions for path, versions in official["file_versions"].items()}
    assert set(history) == {"constants.py", "notes/scratch.txt", "nb.ipynb", "relative.txt"}
    final = {"version": 3, "action": "final", "step_index": None, "timestamp_ms": None,
             "content_hash": hashlib.sha256(b"G = 6.674\n").hexdigest()[:16], "content_length": 10,
             "diff_summary": None}
    assert output["file_versions"] == {**history, "constants.py": [*history["constants.py"], final]}
    # An edit's hash is of "old|new", as the official client records it: it names the edit, not the file.
    assert output["file_versions"]["constants.py"][1]["content_hash"] == hashlib.sha256(
        b"6.67|6.674").hexdigest()[:16]

    # The trajectory file: the official step list, with host paths sanitised like every sidecar.
    name = output["trajectory_file"]
    assert name == "demo.traj__seed31415__b1.trajectory.json"
    steps = json.loads((tmp_path / "out" / "demo.traj" / name).read_text())
    assert steps == json.loads(json.dumps(official["steps"]).replace(workspace, "<workspace>"))
    assert [s["step_type"] for s in steps][:4] == ["system", "thinking", "llm_response", "tool_call"]
