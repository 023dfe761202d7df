from __future__ import annotations

import json
from pathlib import Path

from scoring.engine import static_validate

from .transit_task import write_yaml


def test_clean_task_has_no_findings(make_task) -> None:
    task_dir = make_task({"gates": [], "scoring": [{"scorer": "file_match", "weight": 100}]})
    assert static_validate(task_dir) == ([], [])


def test_missing_metadata(tmp_path: Path) -> None:
    errors, warnings = static_validate(tmp_path)
    assert len(errors) == 1 and "neither task.yaml nor task_meta.yaml" in errors[0]


def test_field_status_version_and_domain_rules(make_task) -> None:
    meta = {
        "id": "alchemy.demo_task",
        "name": " ",
        "version": "v1",
        "status": "done",
        "domain": "alchemy",
        "abandoned_reason": "x",
    }
    task_dir = make_task({"scoring": [{"scorer": "file_match", "weight": 1}]}, meta=meta)
    errors, warnings = static_validate(task_dir)
    assert "missing required field: name" in errors
    assert any(e.startswith("status must be one of") for e in errors)
    assert any("version 'v1'" in e for e in errors)
    assert "domain 'alchemy' is not a standard domain" in warnings
    assert "abandoned_reason set on a task that is not abandoned" in warnings
    assert "task directory domain 'math' does not match id prefix 'alchemy'" in errors


def test_evaluation_checks(make_task) -> None:
    task_dir = make_task({"score_divisor": True, "gates": {"a": 1}, "scoring": [{"scorer": "numerical"}]})
    errors, _ = static_validate(task_dir)
    assert any("score_divisor" in e for e in errors)
    assert "evaluation.gates must be a list" in errors
    assert "evaluation.scoring[0] must be a mapping with 'scorer' and 'weight'" in errors
    errors, _ = static_validate(make_task(None, name="no_eval"))
    assert "evaluation section missing or not a mapping" in errors
    _, warnings = static_validate(make_task({}, name="empty_eval"))
    assert "evaluation defines neither gates nor scoring" in warnings


def test_prompt_checks(make_task) -> None:
    task_dir = make_task({"scoring": []})
    (task_dir / "prompt_b2.md").write_text("   \n")
    (task_dir / "prompt_b3.md").write_bytes(b"\xff\xfe bad")
    (task_dir / "prompt_b1.md").unlink()
    errors, _ = static_validate(task_dir)
    assert "prompts.b1: prompt_b1.md does not exist" in errors
    assert "prompts.b2: prompt_b2.md is empty" in errors
    assert "prompts.b3: prompt_b3.md is not valid UTF-8" in errors


def test_generation_and_custom_script_checks(make_task) -> None:
    task_dir = make_task(
        task_eval={
            "task_id": "math.demo_task",
            "evaluation": {"scoring": [{"scorer": "custom", "weight": 1, "config": {"script": "missing.py"}}]},
            "generation": {"script": "generate_gt.py", "mode": "sometimes"},
        }
    )
    errors, _ = static_validate(task_dir)
    assert "generation.script generate_gt.py does not exist" in errors
    assert "generation.mode must be infinite or finite (got 'sometimes')" in errors
    assert "evaluation.scoring: custom scorer script missing.py does not exist" in errors


def test_id_rules_and_directory_name_warning(make_task) -> None:
    meta = {"id": "math.other_name", "name": "n", "version": "1", "status": "test", "domain": "math"}
    errors, warnings = static_validate(make_task({"scoring": []}, meta=meta))
    assert errors == []
    assert "task directory name 'demo_task' differs from task name 'other_name'" in warnings
    meta = {"id": "single", "name": "n", "version": "1", "status": "test", "domain": "math"}
    errors, _ = static_validate(make_task({"scoring": []}, meta=meta, name="second"))
    assert "id 'single' must be <domain>.<task_name>" in errors


def test_abandoned_tasks_skip_evaluation_and_prompts(make_task) -> None:
    meta = {"id": "math.demo_task", "name": "n", "version": "1", "status": "abandoned", "domain": "math"}
    task_dir = make_task(None, meta=meta)
    (task_dir / "prompt_b1.md").unlink()
    errors, warnings = static_validate(task_dir)
    assert errors == []
    assert warnings == ["abandoned task without abandoned_reason"]


def test_task_info_must_not_leak_instance_data(make_task) -> None:
    task_dir = make_task({"scoring": []})
    (task_dir / "task_info.json").write_text(json.dumps({"task_id": "x", "seed": 4, "parameters": {}}))
    errors, _ = static_validate(task_dir)
    assert "task_info.json must not contain parameters, seed" in errors


def test_final_task_without_passing_difficulty_record(make_task, tmp_path: Path) -> None:
    meta = {"id": "math.demo_task", "name": "n", "version": "1", "status": "final", "domain": "math"}
    task_dir = make_task({"scoring": [{"scorer": "file_match", "weight": 100}]}, meta=meta)
    scores = tmp_path / "scores"
    scores.mkdir()
    _, warnings = static_validate(task_dir, scores_dir=scores)
    assert any("no difficulty record" in w for w in warnings)
    (scores / "math.demo_task.json").write_text(json.dumps({"evaluations": [{"verdict": "fail"}]}))
    _, warnings = static_validate(task_dir, scores_dir=scores)
    assert "final task has no difficulty evaluation with verdict: pass" in warnings
    (scores / "math.demo_task.json").write_text(json.dumps({"evaluations": [{"verdict": "pass"}]}))
    assert static_validate(task_dir, scores_dir=scores) == ([], [])


def test_legacy_layout_is_validated(tmp_path: Path) -> None:
    task_dir = tmp_path / "legacy"
    task_dir.mkdir()
    write_yaml(
        task_dir / "task.yaml",
        {
            "id": "math.legacy",
            "name": "n",
            "version": 2,
            "status": "sample",
            "domain": "math",
            "evaluation": {"scoring": [{"scorer": "x", "weight": 1}]},
        },
    )
    for level in ("b1", "b2", "b3"):
        (task_dir / f"prompt_{level}.md").write_text("p")
    assert static_validate(task_dir) == ([], [])
