"""`asibench run` records what the agent did: `_trajectory.jsonl` (contract §5.8) becomes `trajectory_summary`
and `file_versions` (§5.4), the declared outputs' final hashes join the file history, logs keep their tails."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from cli_client.run_records import LOG_TAIL_CHARS
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


def run_agent(tmp_path: Path, script: str) -> dict:
    instances = tmp_path / "instances"
    synthetic_instance(instances, "demo.traj", ["constants.py"])
    agent = tmp_path / "agent.py"
    agent.write_text(script.replace("LOG", str(LOG_TAIL_CHARS)))
    out = tmp_path / "out"
    done = cli(["run", "--instances-dir", str(instances), "--agent-cmd", f"{sys.executable} {agent} {{workspace}}",
                "--prompt-levels", "b1", "--output-dir", str(out)], cli_env(tmp_path / "home"))
    assert done.returncode == 0, done.stderr
    return json.loads((out / "demo.traj" / "demo.traj__seed31415__b1.json").read_text())


def test_the_agents_trajectory_becomes_the_official_summary_and_file_history(tmp_path: Path) -> None:
    output = run_agent(tmp_path, AGENT)["agent_output"]
    assert output["trajectory_summary"] == {
        "total_turns": 2, "total_tool_calls": 3, "tool_call_distribution": {"Write": 1, "Bash": 1, "Edit": 1},
        "thinking_total_chars": 3, "total_code_executions": 1, "code_execution_failures": 1,
        "unique_files_modified": ["<workspace>/constants.py"]}
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
