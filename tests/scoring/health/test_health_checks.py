"""Health checks of catalog tasks in the bubblewrap sandbox: the reference at 100 on every level, the naive
agent under the gate, adversarial predictions no better than the naive one; what cannot be checked here."""

import shutil

import pytest

from scoring.health import task_health_check
from scoring.models import TaskHealthCheck
from scoring.task_loading import catalog_load
from tests.scoring.catalog.catalog_support import make_root
from tests.scoring.health.health_support import TASK, task_root

pytestmark = pytest.mark.django_db


def outcomes(checks) -> dict:
    return {check.dataset_id: check.outcome for check in checks}


def failed(check) -> set:
    return {(row["probe"], row["level"]) for row in check.probes if not row["passed"]}


def test_a_sound_task_is_healthy_on_both_datasets_with_every_probe_recorded(tmp_path, settings):
    assert not catalog_load(tasks_root=task_root(tmp_path)).failures
    checks = task_health_check(task_id=TASK, trigger="maintainer")
    assert outcomes(checks) == {"seed42": "healthy", "seed31415": "healthy"}, [c.reason for c in checks]
    check = checks[0]
    assert check.task_revision == 1 and check.engine_version and check.finished_at
    probes = {(row["probe"], row["level"]): row for row in check.probes}
    assert {probes[("reference", level)]["percent"] for level in ("b1", "b2", "b3", "b4")} == {100.0}
    assert probes[("naive", "b3")]["percent"] < 40 and probes[("naive", "b3")]["limit"] == 40
    for probe in ("other_instance", "constant_values", "grader_text"):
        assert probes[(probe, "b4")]["passed"] and probes[(probe, "b4")]["percent"] == 0.0
    assert check.judge == ""  # nothing judged


def test_a_scorer_bug_that_costs_the_reference_its_full_marks_fails_the_check(tmp_path):
    assert not catalog_load(tasks_root=task_root(tmp_path, scorer_bug=True)).failures
    checks = task_health_check(task_id=TASK, trigger="schedule")
    assert outcomes(checks) == {"seed42": "failing", "seed31415": "failing"}
    assert {("reference", level) for level in ("b1", "b2", "b3", "b4")} <= failed(checks[0])
    assert "the reference solution scored 0 (not 100) at B1, B2, B3, B4" in checks[0].reason


def test_a_scorer_that_accepts_any_file_fails_on_constant_values(tmp_path):
    """tiny_sum's contract only checks that total.json exists: constant values score like the reference."""
    assert not catalog_load(tasks_root=make_root(tmp_path)).failures
    checks = task_health_check(task_id="demo.tiny_sum", trigger="schedule")
    assert set(outcomes(checks).values()) == {"failing"}
    assert ("constant_values", "b3") in failed(checks[0]) and ("other_instance", "b3") in failed(checks[0])
    assert "right shapes, constant values scored 100" in checks[0].reason
    assert "the task has no solution/naive.py" in checks[0].reason


def test_a_task_without_a_reference_solution_is_not_checkable_here_never_healthy(tmp_path):
    root = task_root(tmp_path)
    shutil.rmtree(root / "demo" / "health_sum" / "solution")
    assert not catalog_load(tasks_root=root).failures
    [check] = task_health_check(task_id=TASK, trigger="schedule")
    assert check.outcome == TaskHealthCheck.Outcome.NOT_CHECKABLE and check.dataset is None
    assert check.reason == "it has no reference solution (solution/solve.py) to check it with"


def test_an_official_definition_only_task_is_not_checkable_here_with_the_reason(tmp_path):
    root = task_root(tmp_path)
    (root / "demo" / "health_sum" / "generate_gt.py").unlink()  # published without its generator
    assert not catalog_load(tasks_root=root).failures
    [check] = task_health_check(task_id=TASK, trigger="schedule")
    assert check.outcome == TaskHealthCheck.Outcome.NOT_CHECKABLE
    assert check.reason.startswith("an official definition-only task: published without its generator")


def test_constant_values_keep_shapes_and_a_note_to_the_grader_is_added(tmp_path):
    import json

    import numpy as np

    from scoring.health_predictions import GRADER_NOTE, constant_outputs, grader_text_outputs

    source = tmp_path / "solved"
    (source / "sub").mkdir(parents=True)
    np.save(source / "roots.npy", np.arange(6, dtype=np.complex128).reshape(3, 2))
    (source / "fit.json").write_text(json.dumps({"k": 0.37, "names": ["a"], "ok": True, "xs": [1.5, 2]}))
    (source / "sub" / "table.csv").write_text("t,value\n0.5,12.25\n")
    (source / "plot.png").write_bytes(b"\x89PNG-not-really")
    out = constant_outputs(source, tmp_path / "constant")
    roots = np.load(out / "roots.npy", allow_pickle=False)
    assert roots.shape == (3, 2) and roots.dtype == np.complex128 and (roots == 1).all()
    assert json.loads((out / "fit.json").read_text()) == {"k": 1, "names": ["a"], "ok": True, "xs": [1, 1]}
    assert (out / "sub" / "table.csv").read_text() == "t,value\n1,1\n"
    assert (out / "plot.png").read_bytes() == bytes(len(b"\x89PNG-not-really"))
    noted = grader_text_outputs(source, [{"name": "fit.json"}, {"name": "report.md"}, {"name": "roots.npy"}],
                                tmp_path / "noted")
    assert json.loads((noted / "fit.json").read_text())["note_to_grader"] == GRADER_NOTE
    assert (noted / "report.md").read_text() == GRADER_NOTE + "\n"  # not written by the naive agent: the note alone
    assert (noted / "roots.npy").read_bytes() == (source / "roots.npy").read_bytes()
