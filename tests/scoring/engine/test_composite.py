from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scoring.engine import score_instance
from scoring.engine.scorers.composite import CompositeScorer


def test_composite_blends_normalised_sub_scores(tmp_path: Path) -> None:
    np.save(tmp_path / "x.npy", np.array([1.0, 1.0]))
    np.save(tmp_path / "x_ref.npy", np.array([1.0, 1.0]))
    config = {
        "weight": 20,
        "sub_scorers": [
            {"scorer": "file_match", "weight": 3, "config": {"checks": [{"file": "x.npy"}]}},
            {"scorer": "file_match", "weight": 1, "config": {"checks": [{"file": "missing.npy"}]}},
            {"scorer": "numerical", "config": {"file": "x.npy", "ref_file": "x_ref.npy", "threshold": 0.1}},
        ],
    }
    result = CompositeScorer().score(tmp_path, tmp_path, config)
    # (1*3 + 0*1 + 1*1) / 5 * 20
    assert result.score == pytest.approx(16.0)
    assert result.passed is False
    assert [r["max_score"] for r in result.details["sub_results"]] == [1.0, 1.0, 1.0]


def test_empty_composite_is_zero_with_error(tmp_path: Path) -> None:
    result = CompositeScorer().score(tmp_path, tmp_path, {"weight": 5})
    assert result.score == 0.0 and result.details["error"]


def test_sub_scorer_exception_crashes_the_composite(make_task, dirs) -> None:
    evaluation = {
        "scoring": [
            {
                "scorer": "composite",
                "weight": 10,
                "config": {
                    "sub_scorers": [{"scorer": "file_match", "config": {"scoring_mode": "bogus", "checks": []}}]
                },
            }
        ]
    }
    result = score_instance(make_task(evaluation), *dirs, {}, "b1")
    assert result["evaluation_status"] == "evaluation_invalid"
    assert "Unknown scoring_mode" in result["score_results"][0]["message"]


def test_composite_resolves_templates_and_uses_custom_sub_scorers(make_task, dirs) -> None:
    custom = """
    from ai4sci_bench.core.scorer import Scorer, register_scorer
    from ai4sci_bench.core.types import ScoreDetail

    @register_scorer("half_credit")
    class Half(Scorer):
        def score(self, pred_dir, ref_dir, config):
            assert "prompt_level" not in config  # sub-scorers get no prompt_level
            return ScoreDetail("half_credit", 0.5 * config["weight"], config["weight"], True, {"n": config["n"]})
    """
    evaluation = {
        "scoring": [
            {
                "scorer": "composite",
                "weight": 30,
                "config": {"sub_scorers": [{"scorer": "half_credit", "config": {"n": "{k*2}"}}]},
            }
        ]
    }
    result = score_instance(make_task(evaluation, custom=custom), *dirs, {"k": 4}, "b2")
    assert result["final_score"] == pytest.approx(15.0)
    assert result["score_results"][0]["details"]["sub_results"][0]["details"] == {"n": 8}


def test_a_judge_inside_composite_waits_for_its_reply(make_task, dirs) -> None:
    pred, ref = dirs
    (pred / "answer.md").write_text("x")
    evaluation = {
        "scoring": [
            {
                "scorer": "composite",
                "weight": 10,
                "config": {
                    "sub_scorers": [
                        {"scorer": "file_match", "config": {}},
                        {"scorer": "llm_judge", "config": {"pred_file": "answer.md"}},
                    ]
                },
            }
        ]
    }
    result = score_instance(make_task(evaluation), pred, ref, {}, "b1")
    assert result["evaluation_status"] == "judges_pending" and result["final_score"] is None
    assert [(r["scorer"], r["index"]) for r in result["judge_requests"]] == [("llm_judge", 0)]
