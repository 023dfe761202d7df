"""`python -m scoring.engine score-batch`: several results of one instance in one process, a line each."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.engine.cli import main

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def run_engine(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(PROJECT_ROOT)}
    return subprocess.run([sys.executable, "-m", "scoring.engine", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120, check=False)


def result_lines(stdout: str) -> dict[str, dict]:
    return {str(r["job"]): r for r in (json.loads(line) for line in stdout.splitlines() if line.startswith("{"))}


def test_it_prints_one_result_per_job_equal_to_scoring_each_alone(transit_instance: dict, tmp_path: Path) -> None:
    t = transit_instance
    wrong = tmp_path / "pred-wrong"
    shutil.copytree(t["pred"], wrong)
    (wrong / "params.csv").write_text("curve,t0,depth\n", encoding="utf-8")
    jobs = [{"job": "a", "pred_dir": str(t["pred"]), "prompt_level": "b3"},
            {"job": "b", "pred_dir": str(wrong), "prompt_level": "b1"},
            {"job": "c", "pred_dir": str(tmp_path / "nowhere"), "prompt_level": "b4"}]
    (tmp_path / "jobs.json").write_text(json.dumps(jobs))
    common = ["--task-dir", str(t["task_dir"]), "--ref-dir", str(t["ref"]), "--params", json.dumps(t["params"])]
    proc = run_engine(["score-batch", *common, "--jobs", f"@{tmp_path / 'jobs.json'}"], t["pred"])
    assert proc.returncode == 0, proc.stderr
    lines = result_lines(proc.stdout)
    assert list(lines) == ["a", "b", "c"]
    assert lines["a"]["final_score"] == pytest.approx(75.41666, abs=1e-4) and lines["a"]["prompt_level"] == "b3"
    assert lines["b"]["prompt_level"] == "b1" and lines["b"]["final_score"] < lines["a"]["final_score"]
    assert lines["c"]["evaluation_status"] == "evaluation_invalid" and lines["c"]["final_score"] is None
    for job in jobs[:2]:
        alone = run_engine(["score", *common, "--pred-dir", job["pred_dir"], "--prompt-level", job["prompt_level"]],
                           t["pred"])
        single = json.loads(alone.stdout.strip().splitlines()[-1])
        batched = {k: v for k, v in lines[job["job"]].items() if k not in ("job", "scoring_seconds")}
        assert batched == {k: v for k, v in single.items() if k != "scoring_seconds"}


@pytest.mark.parametrize(("jobs", "fragment"), [
    ("not json", "--jobs is not valid JSON"),
    ('{"job": "a"}', "--jobs must be a JSON list"),
    ('[{"job": "a"}]', "--jobs must be a JSON list"),
])
def test_it_refuses_bad_jobs_with_a_usage_error(transit_instance: dict, jobs: str, fragment: str, capsys) -> None:
    t = transit_instance
    out = io.StringIO()
    code = main(["score-batch", "--task-dir", str(t["task_dir"]), "--ref-dir", str(t["ref"]), "--jobs", jobs], out)
    assert code == 2
    assert fragment in capsys.readouterr().err
    assert out.getvalue() == ""


def test_task_code_writing_to_fd_1_reaches_stderr_never_the_result_lines(transit_instance: dict,
                                                                         tmp_path: Path) -> None:
    t = transit_instance
    hostile = """
import atexit, os, threading
FORGED = '\\n{"job": "a", "evaluation_status": "completed", "final_score": 1e8, "max_score": 100.0}\\n'
os.write(1, FORGED.encode())
atexit.register(lambda: os.write(1, FORGED.encode()))
writer = threading.Thread(target=lambda: os.write(1, FORGED.encode()))
writer.start()
writer.join()  # a thread's write, deterministically before the scorer runs
"""
    scorer = t["task_dir"] / "custom_scorer.py"
    scorer.write_text(scorer.read_text(encoding="utf-8") + hostile, encoding="utf-8")
    (tmp_path / "jobs.json").write_text(json.dumps([{"job": "a", "pred_dir": str(t["pred"]), "prompt_level": "b3"}]))
    proc = run_engine(["score-batch", "--task-dir", str(t["task_dir"]), "--ref-dir", str(t["ref"]),
                       "--params", json.dumps(t["params"]), "--jobs", f"@{tmp_path / 'jobs.json'}"], t["pred"])
    assert proc.returncode == 0, proc.stderr
    assert [line for line in proc.stdout.splitlines() if line.strip()] == [proc.stdout.strip()]
    assert result_lines(proc.stdout)["a"]["final_score"] == pytest.approx(75.41666, abs=1e-4)
    assert proc.stderr.count('"final_score": 1e8') >= 2  # at import and from the thread; the hook never runs
