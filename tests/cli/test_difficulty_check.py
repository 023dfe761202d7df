"""`asibench difficulty-check` for real: generated instances, example agents, our engine (contract §4.5)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from cli_client.running.runner import SANDBOXES
from contracts.task_files import SUBMISSION_FILE
from proposals.files import imported_fields
from tests.cli.agent_runs import AGENT_MOUNTS, AGENTS, REPO, cli, cli_env, snapshot
from tests.support import OUR_CLI

pytestmark = pytest.mark.slow

# The command's verdicts on three tasks of different domains (chemistry, computer science, physics). That
# every task of tasks/ meets the bar itself (reference >= 95 and naive < 40 at every level) is
# tests/tasks/test_task_quality.py's, through the engine, for tasks added later too.
TASK_IDS = ["chemistry.counterpoise_cbs_energies", "computer_science.cache_miss_classification",
            "physics.double_well_tunnelling"]
CHEAP_TASK = "chemistry.counterpoise_cbs_energies"


def check(args: list[str], home: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return cli(["difficulty-check", *args], cli_env(home), timeout=timeout)


def record(scores: Path, task_id: str) -> dict:
    return json.loads((scores / f"{task_id}.json").read_text(encoding="utf-8"))


def latest_scores(scores: Path, task_id: str) -> dict:
    evaluation = record(scores, task_id)["evaluations"][-1]
    return evaluation["results"][0]["scores"]


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_reference_agent_makes_every_task_fail_the_check(task_id: str, tmp_path: Path) -> None:
    task_dir = REPO / "tasks" / task_id.replace(".", "/")
    before = snapshot(task_dir)
    done = check(["--task", task_id, "--agent-cmd", AGENTS["reference"], "--scores-dir", str(tmp_path / "scores"),
                  "--agent-config", '{"agent": "reference_agent", "model": "solution/solve.py"}'], tmp_path / "home")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL" in done.stdout and "RECORDED" in done.stdout
    assert "difficulty check failed: B3 mean" in done.stderr
    saved = record(tmp_path / "scores", task_id)
    evaluation = saved["evaluations"][-1]
    assert saved["task_id"] == task_id and evaluation["verdict"] == "fail" and evaluation["threshold"] == 40
    assert evaluation["results"][0]["agent"] == "reference_agent"
    for level in ("b1", "b2", "b3", "b4"):
        stats = evaluation["results"][0]["scores"][level]
        assert stats["n"] == 1 and stats["mean"] >= 95, (level, stats)
    assert snapshot(task_dir) == before  # not interactive: task_submission.yaml is left alone


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_the_naive_agent_makes_every_task_pass_the_check(task_id: str, tmp_path: Path) -> None:
    done = check(["--task", task_id, "--agent-cmd", AGENTS["naive"], "--scores-dir", str(tmp_path / "scores")],
                 tmp_path / "home")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Verdict: PASS" in done.stdout and "FAIL" not in done.stdout
    assert [line.split()[-2] for line in done.stdout.splitlines() if line.startswith(("│ B3", "│ B4"))] == \
        ["PASS", "PASS"]
    evaluation = record(tmp_path / "scores", task_id)["evaluations"][-1]
    assert evaluation["verdict"] == "pass" and evaluation["sandbox"] == "none"
    scores = evaluation["results"][0]["scores"]
    assert scores["b3"]["mean"] < 40 and scores["b4"]["mean"] < 40


def test_it_runs_the_agent_in_bubblewrap_and_records_the_sandbox(tmp_path: Path) -> None:
    done = check(["--task", CHEAP_TASK, "--agent-cmd", AGENTS["reference"], "--sandbox", "linux_ns",
                  *AGENT_MOUNTS, "--prompt-levels", "b3", "--scores-dir", str(tmp_path / "scores")],
                 tmp_path / "home")
    assert done.returncode == 1, done.stdout + done.stderr
    evaluation = record(tmp_path / "scores", CHEAP_TASK)["evaluations"][-1]
    assert evaluation["sandbox"] == "linux_ns" and list(evaluation["results"][0]["scores"]) == ["b3"]
    assert evaluation["results"][0]["scores"]["b3"]["mean"] >= 95


def test_a_lower_threshold_is_stricter_and_levels_without_b3_b4_pass_vacuously(tmp_path: Path) -> None:
    scores = tmp_path / "scores"
    only_b1 = check(["--task", CHEAP_TASK, "--agent-cmd", AGENTS["reference"], "--prompt-levels", "b1",
                     "--scores-dir", str(scores)], tmp_path / "home")
    assert only_b1.returncode == 0, only_b1.stdout + only_b1.stderr
    assert "RECORDED" in only_b1.stdout and latest_scores(scores, CHEAP_TASK)["b1"]["mean"] >= 95
    # The half-right attempt sits between the naive and reference scores: above 1, below 40.
    half = f"python {REPO}/tests/interop/half_right_agent.py --workspace {{workspace}}"
    strict = check(["--task", CHEAP_TASK, "--agent-cmd", half, "--prompt-levels", "b3", "--threshold", "1",
                    "--scores-dir", str(scores)], tmp_path / "home")
    b3 = latest_scores(scores, CHEAP_TASK)["b3"]["mean"]
    assert 1 <= b3 < 95
    assert strict.returncode == 1, strict.stdout + strict.stderr
    assert "not below 1" in strict.stderr
    saved = record(scores, CHEAP_TASK)["evaluations"]
    assert [e["verdict"] for e in saved] == ["pass", "fail"]  # appended, the latest last
    assert saved[-1]["threshold"] == 1


def test_it_saves_under_scores_in_the_working_directory_by_default(tmp_path: Path) -> None:
    done = subprocess.run([*OUR_CLI, "difficulty-check", "--task", CHEAP_TASK, "--tasks-dir", str(REPO / "tasks"),
                           "--agent-cmd", AGENTS["naive"], "--prompt-levels", "b4"], env=cli_env(tmp_path / "home"),
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert record(tmp_path / "scores", CHEAP_TASK)["evaluations"][0]["verdict"] == "pass"


def test_it_writes_the_results_into_task_submission_yaml_when_asked(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    task_dir = tasks / "chemistry" / "counterpoise_cbs_energies"
    shutil.copytree(REPO / "tasks" / "chemistry" / "counterpoise_cbs_energies", task_dir)
    other = {"provider": "Elsewhere", "family": "m-1", "version": "base", "agent": "codex_cli", "sandbox": "os",
             "results": [{"prompt_level": "b1", "score": 70}]}
    (task_dir / SUBMISSION_FILE).write_text(yaml.safe_dump({"schema_version": 1, "scientific_goal": "Goal.",
                                                            "local_test_results": [other]}), encoding="utf-8")
    config = '{"agent": "naive_agent", "provider": "Local", "model": "baseline", "effort": "none"}'
    args = ["--task", CHEAP_TASK, "--tasks-dir", str(tasks), "--agent-config", config,
            "--agent-cmd", f"{AGENTS['naive']} --tasks-dir {tasks}", "--scores-dir", str(tmp_path / "scores")]
    first = check([*args, "--yes"], tmp_path / "home")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Wrote the results into" in first.stdout
    second = check([*args, "--write-yaml"], tmp_path / "home")
    assert second.returncode == 0, second.stdout + second.stderr

    evidence = yaml.safe_load((task_dir / SUBMISSION_FILE).read_text(encoding="utf-8"))
    assert evidence["scientific_goal"] == "Goal." and evidence["local_testing_done"] is True
    entries = evidence["local_test_results"]
    assert entries[0] == other and len(entries) == 2  # the second run replaced its own entry only
    entry = entries[1]
    assert {k: entry[k] for k in ("provider", "family", "version", "agent", "sandbox")} == {
        "provider": "Local", "family": "baseline", "version": "base", "agent": "naive_agent", "sandbox": "none"}
    mean = latest_scores(tmp_path / "scores", CHEAP_TASK)
    assert entry["results"] == [{"prompt_level": lv, "score": round(mean[lv]["mean"], 2)}
                                for lv in ("b1", "b2", "b3", "b4")]
    assert set(entry["runtime_evidence"]) == {"generation_seconds", "agent_execution_seconds", "scoring_seconds",
                                              "environment"}
    assert entry["scorer_replay"]["first_score"] == entry["scorer_replay"]["second_score"]
    # The Portal reads what the command wrote (its importer picks the multi-turn harness entry first).
    fields, _ = imported_fields({SUBMISSION_FILE: (task_dir / SUBMISSION_FILE).read_bytes()})
    assert fields["test_agent"] == "codex_cli" and fields["score_b1"] == 70

    declined = check([*args, "--no-write-yaml", "--agent-config", '{"agent": "other"}'], tmp_path / "home")
    assert declined.returncode == 0
    assert len(yaml.safe_load((task_dir / SUBMISSION_FILE).read_text())["local_test_results"]) == 2


# ------------------------------------------------------------------ bad inputs: exit 2, nothing saved
@pytest.mark.parametrize("threshold", ["0", "41", "40.5", "nan"])
def test_it_refuses_a_threshold_outside_1_to_40(threshold: str, tmp_path: Path) -> None:
    done = check(["--task", CHEAP_TASK, "--agent-cmd", AGENTS["naive"], "--threshold", threshold,
                  "--scores-dir", str(tmp_path / "scores")], tmp_path / "home")
    assert done.returncode == 2
    assert "Invalid value for '--threshold': must be between 1 and 40" in done.stderr
    assert not (tmp_path / "scores").exists()


def test_it_refuses_an_unknown_task(tmp_path: Path) -> None:
    done = check(["--task", "physics.no_such_task", "--agent-cmd", AGENTS["naive"],
                  "--scores-dir", str(tmp_path / "scores")], tmp_path / "home")
    assert done.returncode == 2
    assert "Task physics.no_such_task not found in tasks" in done.stderr
    assert not (tmp_path / "scores").exists()


@pytest.mark.parametrize(("levels", "message"), [("b1,b5", "--prompt-levels must be a comma list"),
                                                  (",", "--prompt-levels must be a comma list")])
def test_it_refuses_unknown_prompt_levels(levels: str, message: str, tmp_path: Path) -> None:
    done = check(["--task", CHEAP_TASK, "--agent-cmd", AGENTS["naive"], "--prompt-levels", levels,
                  "--scores-dir", str(tmp_path / "scores")], tmp_path / "home")
    assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "scores").exists()


def test_it_aborts_when_the_agent_crashes_and_saves_nothing(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks"
    shutil.copytree(REPO / "tasks" / "chemistry", tasks / "chemistry")
    before = snapshot(tasks)
    # The first level completes; the crash on B3 must still void the whole check.
    crash = f"if [ {{prompt_level}} = b3 ]; then exit 3; fi; {AGENTS['reference']} --tasks-dir {tasks}"
    done = check(["--task", CHEAP_TASK, "--tasks-dir", str(tasks), "--agent-cmd", crash, "--yes",
                  "--scores-dir", str(tmp_path / "scores")], tmp_path / "home")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "1 of 4 agent runs did not complete" in done.stderr and "__b3 failed" in done.stderr
    assert "nothing was scored or saved" in done.stderr and "\nscored " not in done.stderr
    assert not (tmp_path / "scores").exists()
    assert snapshot(tasks) == before  # --yes wrote no task_submission.yaml


def test_it_aborts_when_the_agent_times_out_and_saves_nothing(tmp_path: Path) -> None:
    scores = tmp_path / "scores"
    scores.mkdir()
    (scores / f"{CHEAP_TASK}.json").write_text('{"task_id": "x", "evaluations": []}', encoding="utf-8")
    done = check(["--task", CHEAP_TASK, "--agent-cmd", "sleep 60 # {workspace}", "--timeout", "2",
                  "--prompt-levels", "b4", "--scores-dir", str(scores)], tmp_path / "home", timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "__b4 timeout" in done.stderr
    assert (scores / f"{CHEAP_TASK}.json").read_text() == '{"task_id": "x", "evaluations": []}'


def test_it_refuses_to_overwrite_a_file_that_is_not_a_record(tmp_path: Path) -> None:
    scores = tmp_path / "scores"
    scores.mkdir()
    (scores / f"{CHEAP_TASK}.json").write_text("my notes", encoding="utf-8")
    done = check(["--task", CHEAP_TASK, "--agent-cmd", AGENTS["naive"], "--prompt-levels", "b4",
                  "--scores-dir", str(scores)], tmp_path / "home")
    assert done.returncode == 1
    assert "exists but is not a difficulty record" in done.stderr
    assert (scores / f"{CHEAP_TASK}.json").read_text() == "my notes"


def test_sandbox_os_delegates_to_run_or_says_it_is_unavailable(tmp_path: Path) -> None:
    done = check(["--task", CHEAP_TASK, "--agent-cmd", AGENTS["naive"], "--sandbox", "os", "--prompt-levels", "b4",
                  "--scores-dir", str(tmp_path / "scores")], tmp_path / "home")
    if "os" in SANDBOXES:  # `asibench run --sandbox os` exists: the check runs through it
        assert done.returncode in (0, 2), done.stdout + done.stderr
        assert done.returncode == 2 or record(tmp_path / "scores", CHEAP_TASK)["evaluations"][0]["sandbox"] == "os"
    else:
        assert done.returncode == 2
        assert "--sandbox os is not available in this client" in done.stderr
        assert not (tmp_path / "scores").exists()


def test_it_asks_before_writing_task_submission_yaml_when_interactive(tmp_path: Path) -> None:
    import os
    import pty

    tasks = tmp_path / "tasks"
    task_dir = tasks / "chemistry" / "counterpoise_cbs_energies"
    shutil.copytree(REPO / "tasks" / "chemistry" / "counterpoise_cbs_energies", task_dir)
    args = [*OUR_CLI, "difficulty-check", "--task", CHEAP_TASK, "--tasks-dir", str(tasks), "--prompt-levels", "b3",
            "--agent-cmd", f"{AGENTS['naive']} --tasks-dir {tasks}", "--scores-dir", str(tmp_path / "scores")]
    for answer, written in (("n\n", False), ("y\n", True)):
        controller, terminal = pty.openpty()  # a real terminal on stdin, so the command asks
        os.write(controller, answer.encode())
        try:
            done = subprocess.run(args, stdin=terminal, env=cli_env(tmp_path / "home"), cwd=REPO,
                                  capture_output=True, text=True, timeout=300)
        finally:
            os.close(terminal)
            os.close(controller)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "local_test_results? [y/N]" in done.stdout
        assert (task_dir / SUBMISSION_FILE).exists() is written
    entry = yaml.safe_load((task_dir / SUBMISSION_FILE).read_text())["local_test_results"][0]
    assert [r["prompt_level"] for r in entry["results"]] == ["b3"]
    assert "local_testing_done" not in yaml.safe_load((task_dir / SUBMISSION_FILE).read_text())  # not all 4 levels
