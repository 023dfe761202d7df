from __future__ import annotations

import json

import pytest

from scoring.engine import build_local_report, score_instance


def completed(final: float, max_score: float = 100.0, **identity) -> dict:
    return {
        "evaluation_status": "completed",
        "final_score": final,
        "max_score": max_score,
        "score_divisor": 1.0,
        "hard_gates_passed": True,
        "soft_gate_failures": 0,
        "gate_results": [],
        "score_results": [],
        "scorer_internal_error": False,
        **identity,
    }


def test_report_totals_exclude_invalid_results() -> None:
    invalid = {
        "evaluation_status": "evaluation_invalid",
        "final_score": None,
        "max_score": 100.0,
        "failure_kind": "evaluator_unavailable",
        "scorer_internal_error": True,
    }
    report = build_local_report(
        [
            completed(
                72.5,
                task_id="math.roots_demo",
                instance_id="math.roots_demo__seed31415",
                prompt_level="b1",
                source_result="math.roots_demo/math.roots_demo__seed31415__b1.json",
            ),
            completed(115.0, max_score=300.0, attempt=2),
            invalid,
        ],
        repo="seed31415",
    )
    assert report["schema_version"] == 2
    assert report["repo"] == "seed31415" and report["official"] is False
    assert report["score_scope"] == "public_local"
    assert (report["instance_count"], report["scored_instance_count"], report["scorer_error_count"]) == (3, 2, 1)
    assert report["total_score"] == 187.5 and report["total_max_score"] == 400.0
    assert report["mean_percent"] == pytest.approx(46.875)
    first, second, third = report["results"]
    assert first["attempt"] == 1 and second["attempt"] == 2
    assert first["source_result"] == "math.roots_demo/math.roots_demo__seed31415__b1.json"
    assert third["final_score"] is None and third["failure_kind"] == "evaluator_unavailable"
    assert "failure_kind" not in first
    assert report["generated_at"].endswith("+00:00")
    json.dumps(report, allow_nan=False)


def test_empty_report_has_null_mean() -> None:
    report = build_local_report([], repo="seed31415")
    assert report["mean_percent"] is None and report["instance_count"] == 0


def test_report_from_real_results(transit_instance: dict) -> None:
    t = transit_instance
    result = score_instance(t["task_dir"], t["pred"], t["ref"], t["params"], "b3")
    report = build_local_report([{**result, "instance_id": "astronomy.toy_transit_fit__seed31415"}], "seed31415")
    entry = report["results"][0]
    assert entry["task_id"] == "astronomy.toy_transit_fit" and entry["prompt_level"] == "b3"
    assert entry["gate_results"][0]["severity"] == "hard"
    assert report["mean_percent"] == pytest.approx(75.41666, abs=1e-4)
