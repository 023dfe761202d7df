from __future__ import annotations

import importlib.util
import json
import sys

import numpy as np
import pytest

from scoring.engine import score_instance

from .transit_task import TRANSIT_EVAL, write_yaml


def by_name(results: list[dict], name: str) -> dict:
    return next(r for r in results if r["scorer_name"] == name)


def test_worked_example_scores_75_417(transit_instance: dict) -> None:
    t = transit_instance
    result = score_instance(t["task_dir"], t["pred"], t["ref"], t["params"], "b3")

    assert result["evaluation_status"] == "completed"
    assert result["hard_gates_passed"] is True
    assert result["soft_gate_failures"] == 1  # batman import in the soft code_analysis gate
    assert result["max_score"] == pytest.approx(100.0)
    assert result["final_score"] == pytest.approx(10 * 2 / 3 + 33.75 + 5 + 30)
    assert result["percent"] == pytest.approx(75.41666, abs=1e-4)
    scores = [r["score"] for r in result["score_results"]]
    assert scores == pytest.approx([10 * 2 / 3, 33.75, 5.0, 30.0])
    assert [g["severity"] for g in result["gate_results"]] == ["hard", "soft"]
    assert all(r["severity"] is None for r in result["score_results"])
    assert result["scorer_internal_error"] is False
    assert "failure_kind" not in result
    json.dumps(result, allow_nan=False)  # strictly JSON-serialisable


def test_gates_get_weight_one_and_prompt_level(make_task, dirs) -> None:
    custom = """
    from ai4sci_bench.core.scorer import Scorer, register_scorer
    from ai4sci_bench.core.types import ScoreDetail

    @register_scorer("echo_config")
    class Echo(Scorer):
        def score(self, pred_dir, ref_dir, config):
            return ScoreDetail("echo_config", config["weight"], config["weight"], True,
                               {"config": config})
    """
    evaluation = {
        "gates": [{"scorer": "echo_config", "config": {"size": "{n*2}"}}],
        "scoring": [{"scorer": "echo_config", "weight": 7, "config": {"shape": "{n,3}"}}],
    }
    task_dir = make_task(evaluation, custom=custom)
    result = score_instance(task_dir, *dirs, {"n": 5}, "b2")
    gate_cfg = result["gate_results"][0]["details"]["config"]
    score_cfg = result["score_results"][0]["details"]["config"]
    assert gate_cfg == {"size": 10, "prompt_level": "b2", "weight": 1.0}
    assert score_cfg == {"shape": [5, 3], "prompt_level": "b2", "weight": 7.0}
    assert result["final_score"] == 7.0


def test_hard_gate_failure_skips_scoring_and_scores_zero(transit_instance: dict) -> None:
    t = transit_instance
    np.save(t["pred"] / "model_flux.npy", np.load(t["pred"] / "model_flux.npy").astype(np.float32))
    result = score_instance(t["task_dir"], t["pred"], t["ref"], t["params"], "b1")
    assert result["evaluation_status"] == "completed"
    assert result["hard_gates_passed"] is False
    assert result["score_results"] == []
    assert result["final_score"] == 0.0
    assert "dtype float32" in result["gate_results"][0]["message"]


@pytest.mark.parametrize(("batman", "expected"), [(True, 0.0), (False, 1.0)])
def test_gate_score_sum_adds_gate_scores_on_hard_failure(transit_instance: dict, batman: bool, expected: float) -> None:
    t = transit_instance
    task_eval = json.loads(json.dumps(TRANSIT_EVAL))
    task_eval["evaluation"]["hard_fail_score_mode"] = "gate_score_sum"
    write_yaml(t["task_dir"] / "task_eval.yaml", task_eval)
    np.save(t["pred"] / "model_flux.npy", np.zeros((4, 8), dtype=np.float32))
    if not batman:
        (t["pred"] / "fit.py").write_text("import numpy as np\n", encoding="utf-8")
    result = score_instance(t["task_dir"], t["pred"], t["ref"], t["params"], "b1")
    assert result["hard_gates_passed"] is False
    assert result["final_score"] == expected


def test_score_divisor_divides_final_and_max(make_task, dirs) -> None:
    pred, ref = dirs
    (pred / "a.txt").write_text("x")
    evaluation = {
        "score_divisor": 1.05,
        "scoring": [
            {"scorer": "file_match", "weight": 100, "config": {"checks": [{"file": "a.txt"}]}},
            {"scorer": "file_match", "weight": 5, "config": {"checks": [{"file": "b.txt"}]}},
        ],
    }
    result = score_instance(make_task(evaluation), pred, ref, {}, "b1")
    assert result["final_score"] == pytest.approx(100 / 1.05)
    assert result["max_score"] == pytest.approx(100.0)
    assert result["score_divisor"] == 1.05
    assert result["percent"] == pytest.approx(100 * 100 / 105)


@pytest.mark.parametrize("divisor", [True, 0, -1, "2", float("inf")])
def test_invalid_score_divisor_invalidates_and_keeps_raw_max(make_task, dirs, divisor) -> None:
    evaluation = {"score_divisor": divisor, "scoring": [{"scorer": "file_match", "weight": 30, "config": {}}]}
    if divisor == float("inf"):
        evaluation["score_divisor"] = 1e400  # YAML-dumpable spelling of infinity
    result = score_instance(make_task(evaluation), *dirs, {}, "b1")
    assert result["evaluation_status"] == "evaluation_invalid"
    assert result["final_score"] is None
    assert result["max_score"] == 30.0
    assert result["score_divisor"] is None
    assert "score_divisor" in result["error"]


def test_missing_output_is_a_plain_zero_with_reason(make_task, dirs) -> None:
    evaluation = {
        "scoring": [
            {
                "scorer": "numerical",
                "weight": 50,
                "config": {"pred_file": "out.npy", "ref_file": "placeholder_ref.txt"},
            },
            {"scorer": "code_analysis", "weight": 50, "config": {"target_file": "solve.py"}},
        ]
    }
    result = score_instance(make_task(evaluation), *dirs, {}, "b1")
    assert result["evaluation_status"] == "completed"
    assert result["final_score"] == 0.0
    numerical, code = result["score_results"]
    assert "out.npy: file not found" in numerical["message"]
    assert code["message"] == "Missing file: solve.py"
    assert not numerical["details"].get("scorer_internal_error")


def test_crashing_custom_scorer_is_an_internal_error(make_task, dirs) -> None:
    custom = """
    from ai4sci_bench.core.scorer import Scorer, register_scorer

    @register_scorer("boom")
    class Boom(Scorer):
        def score(self, pred_dir, ref_dir, config):
            raise RuntimeError("reference layout changed")
    """
    evaluation = {
        "scoring": [
            {"scorer": "file_match", "weight": 40, "config": {"checks": []}},
            {"scorer": "boom", "weight": 60, "config": {}},
        ]
    }
    result = score_instance(make_task(evaluation, custom=custom), *dirs, {}, "b1")
    boom = by_name(result["score_results"], "boom")
    assert boom["score"] == 0.0 and boom["max_score"] == 60.0
    assert boom["details"]["scorer_internal_error"] is True
    assert boom["details"]["exception_type"] == "RuntimeError"
    assert boom["message"] == "Scorer crashed: RuntimeError: reference layout changed"
    assert result["evaluation_status"] == "evaluation_invalid"
    assert result["failure_kind"] == "evaluator_runtime_error"
    assert result["final_score"] is None and result["percent"] is None
    assert result["scorer_internal_error"] is True


def test_custom_scorer_calling_sys_exit_does_not_end_the_engine(make_task, dirs) -> None:
    custom = """
    import sys
    from ai4sci_bench.core.scorer import Scorer, register_scorer

    @register_scorer("quitter")
    class Quitter(Scorer):
        def score(self, pred_dir, ref_dir, config):
            sys.exit(3)
    """
    result = score_instance(
        make_task({"scoring": [{"scorer": "quitter", "weight": 1}]}, custom=custom), *dirs, {}, "b1"
    )
    assert result["score_results"][0]["details"]["exception_type"] == "SystemExit"
    assert result["evaluation_status"] == "evaluation_invalid"


def test_custom_scorer_import_error_is_reported_by_the_loader(make_task, dirs) -> None:
    custom = "import definitely_not_a_module_xyz\n"
    result = score_instance(make_task({"scoring": [{"scorer": "x", "weight": 1}]}, custom=custom), *dirs, {}, "b1")
    assert result["evaluation_status"] == "evaluation_invalid"
    assert result["score_results"][0]["scorer_name"] == "custom_scorer_loader"
    assert "definitely_not_a_module_xyz" in result["error"]


def test_custom_scorer_returning_nan_is_flagged(make_task, dirs) -> None:
    custom = """
    from ai4sci_bench.core.scorer import Scorer, register_scorer
    from ai4sci_bench.core.types import ScoreDetail

    @register_scorer("nan_scorer")
    class NanScorer(Scorer):
        def score(self, pred_dir, ref_dir, config):
            return ScoreDetail(scorer_name="nan_scorer", score=float("nan"), max_score=1.0, passed=True, details={})
    """
    result = score_instance(
        make_task({"scoring": [{"scorer": "nan_scorer", "weight": 1}]}, custom=custom), *dirs, {}, "b1"
    )
    assert result["evaluation_status"] == "evaluation_invalid"
    assert "non-finite" in result["score_results"][0]["message"]


def test_shim_is_only_importable_during_the_evaluation(make_task, dirs) -> None:
    custom = """
    from ai4sci_bench.core.scorer import Scorer, register_scorer
    from ai4sci_bench.core.types import ScoreDetail

    @register_scorer("lazy_import")
    class Lazy(Scorer):
        def score(self, pred_dir, ref_dir, config):
            from ai4sci_bench.core.types import ScoreDetail as Late  # import at call time works too
            return Late("lazy_import", 1.0, 1.0, True, {}, "ok")
    """
    result = score_instance(
        make_task({"scoring": [{"scorer": "lazy_import", "weight": 1}]}, custom=custom), *dirs, {}, "b1"
    )
    assert result["final_score"] == 1.0
    assert not any(name == "ai4sci_bench" or name.startswith("ai4sci_bench.") for name in sys.modules)
    if importlib.util.find_spec("ai4sci_bench") is None:  # no real framework installed here
        with pytest.raises(ImportError):
            __import__("ai4sci_bench")


def test_real_ai4sci_bench_module_is_restored(make_task, dirs, monkeypatch) -> None:
    import types

    sentinel = types.ModuleType("ai4sci_bench")
    monkeypatch.setitem(sys.modules, "ai4sci_bench", sentinel)
    custom = """
    from ai4sci_bench.core.scorer import Scorer, register_scorer
    from ai4sci_bench.core.types import ScoreDetail

    @register_scorer("plain_custom")
    class Plain(Scorer):
        def score(self, pred_dir, ref_dir, config):
            return ScoreDetail("plain_custom", 0.5, 1.0, True, {}, "")
    """
    result = score_instance(
        make_task({"scoring": [{"scorer": "plain_custom", "weight": 1}]}, custom=custom), *dirs, {}, "b1"
    )
    assert result["final_score"] == 0.5
    assert sys.modules["ai4sci_bench"] is sentinel


def test_custom_scorer_names_do_not_leak_between_tasks(make_task, dirs) -> None:
    custom = """
    from ai4sci_bench.core.scorer import Scorer, register_scorer
    from ai4sci_bench.core.types import ScoreDetail

    @register_scorer("only_in_task_a")
    class A(Scorer):
        def score(self, pred_dir, ref_dir, config):
            return ScoreDetail("only_in_task_a", 1.0, 1.0, True, {}, "")
    """
    evaluation = {"scoring": [{"scorer": "only_in_task_a", "weight": 1}]}
    first = score_instance(make_task(evaluation, custom=custom, name="task_a"), *dirs, {}, "b1")
    second = score_instance(make_task(evaluation, name="task_b"), *dirs, {}, "b1")
    assert first["final_score"] == 1.0
    assert second["score_results"][0]["message"] == "Scorer crashed: UnknownScorer: Unknown scorer: only_in_task_a"


def test_custom_scorer_can_import_a_helper_module_from_its_task(make_task, dirs) -> None:
    custom = """
    from ai4sci_bench.core.scorer import Scorer, register_scorer
    from ai4sci_bench.core.types import ScoreDetail
    from demo_helpers import FACTOR

    @register_scorer("uses_helper")
    class UsesHelper(Scorer):
        def score(self, pred_dir, ref_dir, config):
            return ScoreDetail("uses_helper", FACTOR * config["weight"], config["weight"], True, {}, "")
    """
    task_dir = make_task({"scoring": [{"scorer": "uses_helper", "weight": 10}]}, custom=custom)
    (task_dir / "demo_helpers.py").write_text("FACTOR = 0.25\n")
    result = score_instance(task_dir, *dirs, {}, "b1")
    assert result["final_score"] == 2.5
    assert "demo_helpers" not in sys.modules
    assert not (task_dir / "__pycache__").exists()


def test_unknown_template_parameter_invalidates_the_instance(make_task, dirs) -> None:
    evaluation = {
        "gates": [{"scorer": "file_match", "config": {"checks": [{"file": "x.npy", "shape": "{n_frames+1}"}]}}]
    }
    result = score_instance(make_task(evaluation), *dirs, {"n": 3}, "b1")
    assert result["evaluation_status"] == "evaluation_invalid"
    assert "n_frames" in result["error"]


def test_invalid_gate_severity_invalidates(make_task, dirs) -> None:
    evaluation = {"gates": [{"scorer": "file_match", "severity": "fatal", "config": {}}]}
    result = score_instance(make_task(evaluation), *dirs, {}, "b1")
    assert result["evaluation_status"] == "evaluation_invalid"
    assert "severity" in result["error"]


def test_severity_is_case_insensitive_and_soft_failures_do_not_penalise(make_task, dirs) -> None:
    evaluation = {
        "gates": [{"scorer": "file_match", "severity": "SOFT", "config": {"checks": [{"file": "nope"}]}}],
        "scoring": [{"scorer": "file_match", "weight": 3, "config": {}}],
    }
    result = score_instance(make_task(evaluation), *dirs, {}, "b1")
    assert result["soft_gate_failures"] == 1
    assert result["hard_gates_passed"] is True
    assert result["final_score"] == 3.0
    assert result["gate_results"][0]["severity"] == "soft"


def test_judges_without_replies_are_pending_not_silently_zero(make_task, dirs) -> None:
    pred, ref = dirs
    (pred / "report.md").write_text("analysis")
    evaluation = {
        "scoring": [
            {"scorer": "file_match", "weight": 50, "config": {}},
            {"scorer": "llm_judge", "weight": 50, "config": {"pred_file": "report.md", "rubric": "..."}},
        ]
    }
    result = score_instance(make_task(evaluation), pred, ref, {}, "b1")
    assert result["evaluation_status"] == "judges_pending"
    assert result["final_score"] is None and result["percent"] is None
    assert result["score_results"][1]["details"]["judge_pending"] is True
    assert len(result["judge_requests"]) == 1


def test_judge_with_missing_prediction_is_a_plain_zero(make_task, dirs) -> None:
    evaluation = {"scoring": [{"scorer": "multimodal", "weight": 20, "config": {"pred_image": "fig.png"}}]}
    result = score_instance(make_task(evaluation), *dirs, {}, "b1")
    assert result["evaluation_status"] == "completed"
    assert result["final_score"] == 0.0
    assert result["score_results"][0]["message"] == "Prediction image not found"


def test_empty_reference_dir_is_missing_input(make_task, tmp_path) -> None:
    pred, ref = tmp_path / "p", tmp_path / "r"
    pred.mkdir()
    ref.mkdir()
    result = score_instance(make_task({"scoring": []}), pred, ref, {}, "b1")
    assert result["evaluation_status"] == "evaluation_invalid"
    assert result["failure_kind"] == "missing_evaluator_input"


def test_task_without_evaluation_is_invalid(make_task, dirs) -> None:
    result = score_instance(make_task(None), *dirs, {}, "b1")
    assert result["evaluation_status"] == "evaluation_invalid"
    assert result["error"] == "task has no evaluation mapping"


def test_zero_max_gives_zero_percent(make_task, dirs) -> None:
    result = score_instance(make_task({"gates": [{"scorer": "file_match", "config": {}}]}), *dirs, {}, "b1")
    assert result["evaluation_status"] == "completed"
    assert result["max_score"] == 0.0 and result["percent"] == 0.0


def test_weight_defaults_to_one(make_task, dirs) -> None:
    result = score_instance(make_task({"scoring": [{"scorer": "file_match", "config": {}}]}), *dirs, {}, None)
    assert result["max_score"] == 1.0 and result["final_score"] == 1.0
    assert "engine_version" in result


def test_missing_pred_dir_is_missing_input(make_task, dirs, tmp_path) -> None:
    _, ref = dirs
    result = score_instance(make_task({"scoring": []}), tmp_path / "absent", ref, {}, "b1")
    assert result["failure_kind"] == "missing_evaluator_input"


def test_params_are_echoed(make_task, dirs) -> None:
    result = score_instance(make_task({"scoring": []}), *dirs, {"n": np.int64(3)}, "b4")
    assert result["parameters"] == {"n": 3}
    assert result["prompt_level"] == "b4"
    assert isinstance(result["parameters"]["n"], int)
