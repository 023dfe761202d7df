"""Pre-submit and difficulty-check of a task with model judges: its judge entries are checked before
anything runs, and the GT self-check feeds the reference to the judges when an endpoint is configured
and says it did not when none is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cli_client.authoring.difficulty import DifficultyAborted, judges_check
from cli_client.authoring.presubmit import validate_task_dir
from scoring.engine import load_task
from tests.judge_endpoint import JudgeEndpoint
from tests.judges.support import LAYOUTS, endpoint_env

pytestmark = pytest.mark.slow
FIXTURE = LAYOUTS / "materials" / "judged_spectrum"


def checks(report) -> dict:  # noqa: ANN001
    return {c.name: c for c in report.checks}


def test_without_an_endpoint_the_judges_are_reported_not_run(monkeypatch) -> None:
    for name in ("ASIBENCH_JUDGE_API_BASE", "ASIBENCH_JUDGE_API_KEY_ENV", "ASIBENCH_JUDGE_API_PROTOCOL",
                 "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    report = validate_task_dir(FIXTURE)
    found = checks(report)
    assert report.ok, [(c.name, c.summary, c.details) for c in report.failures]
    assert found["judges"].ok is True
    assert found["gt_selfcheck"].ok is True and "reference scores 30/30" in found["gt_selfcheck"].summary
    judged = found["gt_selfcheck_judges"]
    assert judged.ok is None and judged.summary.startswith("not run: no judge endpoint is configured")
    assert judged.details == ["[info] 45 points of model judges (2 scorer(s)) were not checked"]


@pytest.mark.parametrize(("default", "accepted"), [("well:8", True), ("well:2", False)])
def test_with_an_endpoint_each_model_judge_must_accept_the_reference(monkeypatch, default, accepted) -> None:
    with JudgeEndpoint(default=default) as endpoint:
        for name, value in endpoint_env(endpoint).items():
            monkeypatch.setenv(name, value)
        report = validate_task_dir(FIXTURE)
        asked = [r["body"]["model"] for r in endpoint.requests]
    judged = checks(report)["gt_selfcheck_judges"]
    assert judged.ok is accepted and report.ok is accepted
    assert sorted(set(asked)) == ["google/gemini-3.5-flash", "gpt-5.4"] and len(asked) == 6
    assert any(line.startswith("llm_judge: ") and "scripted" in line for line in judged.details)
    if not accepted:
        assert "a judge does not accept the reference" in judged.summary


def test_unusable_judge_entries_fail_before_anything_runs(tmp_path: Path) -> None:
    task = tmp_path / "materials" / "judged_spectrum"
    shutil.copytree(FIXTURE, task)
    evaluation = task / "task_eval.yaml"
    evaluation.write_text(evaluation.read_text().replace("model: openai/gpt-5.4\n      pred_image",
                                                         "model: mistral-large\n      pred_image"))
    found = checks(validate_task_dir(task))
    assert found["judges"].ok is False
    assert found["judges"].details == ["scoring[2] (multimodal): judge model 'mistral-large' names no provider this "
                                       "service can call (use openai/…, anthropic/…, gemini/…, google/… or "
                                       "openrouter/…)"]
    assert "gt_selfcheck_judges" not in found


def test_difficulty_check_refuses_a_judged_task_it_cannot_judge() -> None:
    evaluation = load_task(FIXTURE)["evaluation"]
    with pytest.raises(DifficultyAborted, match="the task has model judges and no judge endpoint is configured"):
        judges_check(evaluation, {})
    broken = {"scoring": [{"scorer": "llm_judge", "weight": 1, "config": {"pred_file": "a.md", "rubric": ""}}]}
    with pytest.raises(DifficultyAborted, match="rubric must be a non-empty text"):
        judges_check(broken, {"OPENAI_API_KEY": "k"})
    judges_check(evaluation, {"OPENAI_API_KEY": "k"})  # an endpoint (the provider's own): nothing to refuse
