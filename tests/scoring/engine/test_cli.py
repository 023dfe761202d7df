from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scoring.engine.cli import main, read_result_line, score_argv

PROJECT_ROOT = Path(__file__).resolve().parents[3]


def test_cli_prints_result_json_on_the_last_line(transit_instance: dict) -> None:
    t = transit_instance
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(PROJECT_ROOT)}
    argv = score_argv([sys.executable], task_dir=t["task_dir"], pred_dir=t["pred"], ref_dir=t["ref"],
                      params=json.dumps(t["params"]), prompt_level="b3")
    assert argv[:4] == [sys.executable, "-m", "scoring.engine", "score"]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=t["pred"], timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    result = read_result_line(proc.stdout)
    assert result["final_score"] == pytest.approx(75.41666, abs=1e-4)
    assert result["prompt_level"] == "b3"
    assert not (t["task_dir"] / "__pycache__").exists()


@pytest.mark.parametrize(("stdout", "reason"), [
    ("", "the scorer printed no result"),
    ("  \n\n", "the scorer printed no result"),
    ('{"final_score": 1}\nTraceback (most recent call last)', "the scorer's last line was not a JSON result"),
    ('["not", "an", "object"]\n', "the scorer's last line was not a JSON result"),
])
def test_a_missing_or_malformed_result_line_is_refused_with_its_reason(stdout: str, reason: str) -> None:
    with pytest.raises(ValueError) as refused:
        read_result_line(stdout)
    assert str(refused.value) == reason


def test_the_result_is_the_last_line_after_any_chatter() -> None:
    assert read_result_line('chatter without newline\n{"final_score": 42.5}\n\n') == {"final_score": 42.5}


COMPLETED = ('{"evaluation_status": "completed", "final_score": %s, "max_score": %s, "percent": 1, '
             '"gate_results": [], "score_results": [%s]}')


@pytest.mark.parametrize(("line", "reason"), [
    (COMPLETED % ("NaN", "100", ""), "the scorer's result has a non-finite number (NaN)"),
    (COMPLETED % ("Infinity", "100", ""), "the scorer's result has a non-finite number (Infinity)"),
    (COMPLETED % ("1e400", "100", ""), "the scorer's result has a non-finite number (1e400)"),
    (COMPLETED % ("5", "-Infinity", ""), "the scorer's result has a non-finite number (-Infinity)"),
    (COMPLETED % ("1" * 400, "100", ""), "the scorer reported a non-finite final score"),
    (COMPLETED % ('"5"', "100", ""), "the scorer reported a final score that is not a number: '5'"),
    (COMPLETED % ("true", "100", ""), "the scorer reported a final score that is not a number: True"),
    (COMPLETED % ("5", "-1", ""), "the scorer reported a negative maximum score"),
    (COMPLETED % ("5", "10", '{"scorer_name": "x", "score": 1, "max_score": null}'),
     "the scorer reported a maximum for x that is not a number: None"),
    (COMPLETED % ("5", "10", '"not a detail"'), "the scorer reported a scorer detail that is not an object"),
])
def test_a_result_with_a_non_finite_or_missing_number_is_refused(line: str, reason: str) -> None:
    with pytest.raises(ValueError) as refused:
        read_result_line(line)
    assert str(refused.value) == reason


def test_scores_are_clamped_into_their_range_and_the_percentage_follows() -> None:
    details = ('{"scorer_name": "a", "score": 1e8, "max_score": 40}, '
               '{"scorer_name": "b", "score": -3, "max_score": 60}, '
               '{"scorer_name": "c", "score": 2, "max_score": -5}')
    high = read_result_line(COMPLETED % ("1e8", "100", details))
    assert (high["final_score"], high["max_score"], high["percent"]) == (100.0, 100.0, 100.0)
    assert [(d["score"], d["max_score"]) for d in high["score_results"]] == [(40, 40), (0, 60), (0, 0)]
    low = read_result_line(COMPLETED % ("-1e8", "100", ""))
    assert (low["final_score"], low["percent"]) == (0.0, 0.0)
    assert read_result_line(COMPLETED % ("25", "50", ""))["percent"] == 50.0
    assert read_result_line(COMPLETED % ("25", "0", ""))["percent"] == 0.0


def test_an_invalid_evaluation_passes_through_without_a_score() -> None:
    line = '{"evaluation_status": "evaluation_invalid", "final_score": null, "error": "judge down"}'
    assert read_result_line(line) == {"evaluation_status": "evaluation_invalid", "final_score": None,
                                      "error": "judge down"}


def test_scorer_prints_go_to_stderr(make_task, dirs, capfd) -> None:
    custom = """
    from ai4sci_bench.core.scorer import Scorer, register_scorer
    from ai4sci_bench.core.types import ScoreDetail

    @register_scorer("chatty")
    class Chatty(Scorer):
        def score(self, pred_dir, ref_dir, config):
            print("debug output without newline", end="")
            return ScoreDetail("chatty", 0.0, 1.0, False, {}, "")
    """
    task_dir = make_task({"scoring": [{"scorer": "chatty", "weight": 1}]}, custom=custom)
    out = io.StringIO()
    code = main(
        ["score", "--task-dir", str(task_dir), "--pred-dir", str(dirs[0]), "--ref-dir", str(dirs[1])], stdout=out
    )
    assert code == 0
    assert json.loads(out.getvalue().splitlines()[-1])["final_score"] == 0.0  # a zero is still exit 0
    assert "debug output" not in out.getvalue()
    assert "debug output" in capfd.readouterr().err  # written by the scoring child process


def test_invalid_evaluation_still_exits_zero(make_task, dirs) -> None:
    out = io.StringIO()
    task_dir = make_task({"score_divisor": 0, "scoring": []})
    assert (
        main(["score", "--task-dir", str(task_dir), "--pred-dir", str(dirs[0]), "--ref-dir", str(dirs[1])], stdout=out)
        == 0
    )
    assert json.loads(out.getvalue().splitlines()[-1])["evaluation_status"] == "evaluation_invalid"


@pytest.mark.parametrize("params", ["not json", "[1, 2]"])
def test_bad_params_are_a_usage_error(make_task, dirs, params: str) -> None:
    task_dir = make_task({"scoring": []})
    argv = [
        "score",
        "--task-dir",
        str(task_dir),
        "--pred-dir",
        str(dirs[0]),
        "--ref-dir",
        str(dirs[1]),
        "--params",
        params,
    ]
    out = io.StringIO()
    assert main(argv, stdout=out) == 2
    assert out.getvalue() == ""


def test_missing_arguments_are_a_usage_error() -> None:
    with pytest.raises(SystemExit) as info:
        main(["score", "--task-dir", "x"])
    assert info.value.code == 2


def test_params_from_file(make_task, dirs, tmp_path: Path) -> None:
    (tmp_path / "params.json").write_text('{"n": 3}')
    task_dir = make_task({"scoring": [{"scorer": "file_match", "weight": 1, "config": {"checks": "{n}"}}]})
    out = io.StringIO()
    argv = [
        "score",
        "--task-dir",
        str(task_dir),
        "--pred-dir",
        str(dirs[0]),
        "--ref-dir",
        str(dirs[1]),
        "--params",
        f"@{tmp_path / 'params.json'}",
    ]
    assert main(argv, stdout=out) == 0
    # checks resolved to the int 3 → file_match iterates it and crashes: proves the param arrived
    assert "TypeError" in json.loads(out.getvalue().splitlines()[-1])["score_results"][0]["message"]


def test_validate_and_public_eval_commands(make_task) -> None:
    task_dir = make_task({"scoring": [{"scorer": "file_match", "weight": 1}]})
    out = io.StringIO()
    assert main(["validate", "--task-dir", str(task_dir)], stdout=out) == 0
    assert json.loads(out.getvalue().splitlines()[-1]) == {"ok": True, "errors": [], "warnings": []}
    out = io.StringIO()
    assert main(["public-eval", "--task-dir", str(task_dir)], stdout=out) == 0
    assert json.loads(out.getvalue().splitlines()[-1])["task_id"] == "math.demo_task"
