"""The B3/B4 policy and the scores/<task_id>.json record as pure functions (scoring contract §4.5)."""

from __future__ import annotations

import math

import pytest

from contracts import difficulty as policy


def test_only_b3_and_b4_are_enforced_and_the_bound_is_strict() -> None:
    rows = [policy.level_row("b1", [100.0, 90.0], 40), policy.level_row("b3", [40.0, 40.0], 40),
            policy.level_row("b4", [39.0, 40.98], 40)]
    assert rows[0] == {"prompt_level": "b1", "mean": 95.0, "max": 100.0, "min": 90.0, "n": 2, "enforced": False,
                       "passed": True}
    assert rows[1]["passed"] is False  # mean == threshold is not below it
    assert rows[2]["passed"] is True and rows[2]["mean"] == pytest.approx(39.99)
    assert policy.verdict(rows) == "fail"
    assert policy.verdict(rows[:1]) == "pass"  # no B3/B4 run: vacuously pass
    assert policy.verdict([policy.level_row("b3", [10.0], 5)]) == "fail"  # a lower threshold is stricter


@pytest.mark.parametrize(("value", "ok"), [(1, True), (40, True), (0.99, False), (40.01, False), (math.nan, False)])
def test_the_threshold_is_accepted_from_1_to_40(value: float, ok: bool) -> None:
    assert (policy.threshold_problem(value) is None) is ok


def test_gate_problems_name_each_level_and_refuse_unreadable_scores() -> None:
    assert policy.gate_problems({"b1": 99, "b2": 99, "b3": 39.9, "b4": 0}) == []
    assert policy.gate_problems({"b3": 40, "b4": "inf"}) == [
        "no usable B4 score is recorded ('inf')",
        "B3 scored 40, not below 40: the task is too easy without the method (B3 and B4 must stay below 40)"]
    assert policy.gate_problems({"b3": True, "b4": 1}) == ["no usable B3 score is recorded (True)"]
    assert policy.too_easy_problems({"b3": None, "b4": 55}) == [
        "B4 scored 55, not below 40: the task is too easy without the method (B3 and B4 must stay below 40)"]


def test_the_public_summary_keeps_the_latest_evaluation_and_drops_configuration_and_seeds() -> None:
    old = {"verdict": "fail", "results": [{"agent": "a", "scores": {"b3": {"mean": 90, "max": 90, "min": 90, "n": 1}}}]}
    latest = {"date": "2026-12-01T03:00:00+00:00", "verdict": "pass", "threshold": 30, "sandbox": "os",
              "instances_per_task": 2, "seeds": [123456], "trigger_ref": "secret-ref",
              "results": [{"agent": "codex_cli", "model": "gpt-x", "agent_config": {"endpoint": "https://private"},
                           "scores": {"b1": {"mean": 80, "max": 90, "min": 70, "n": 2},
                                      "b4": {"mean": 29.5, "max": 31, "min": 28, "n": 2},
                                      "b2": {"mean": "bad"}}}]}
    record = policy.append_evaluation(policy.append_evaluation(None, task_id="t.x", task_version="1", evaluation=old),
                                      task_id="t.x", task_version="1.1", evaluation=latest)
    assert record["task_version"] == "1.1" and [e["verdict"] for e in record["evaluations"]] == ["fail", "pass"]
    summary = policy.public_summary(record)
    assert summary == {
        "date": "2026-12-01T03:00:00+00:00", "verdict": "pass", "threshold": 30.0, "sandbox": "os",
        "instances_per_task": 2,
        "agents": [{"agent": "codex_cli", "model": "gpt-x", "rows": [
            {"mean": 80.0, "max": 90.0, "min": 70.0, "n": 2, "prompt_level": "b1", "enforced": False, "passed": True},
            {"mean": 29.5, "max": 31.0, "min": 28.0, "n": 2, "prompt_level": "b4", "enforced": True, "passed": True},
        ]}],
    }
    assert policy.public_summary({"evaluations": []}) is None and policy.public_summary(None) is None
