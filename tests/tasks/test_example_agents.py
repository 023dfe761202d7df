"""The example agents resolve the anonymised task id and refuse workspaces they cannot place."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
AGENTS = ("reference_agent.py", "naive_agent.py")


@pytest.mark.parametrize("agent", AGENTS)
def test_it_exits_non_zero_with_a_clear_message_when_no_task_matches(agent: str, tmp_path: Path) -> None:
    (tmp_path / "task_info.json").write_text(json.dumps({"task_id": "task_000000000000"}), encoding="utf-8")
    done = subprocess.run([sys.executable, str(REPO / "examples" / "agents" / agent), "--workspace", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "no task" in done.stderr and "task_000000000000" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["task_info.json"]


@pytest.mark.parametrize("agent", AGENTS)
def test_it_refuses_a_workspace_without_task_info(agent: str, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(REPO / "examples" / "agents" / agent), "--workspace", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0
    assert "task_info.json" in done.stderr
