"""Bootstrap intervals over tasks, checked against direct computations."""

import itertools
import math

import numpy as np
import pytest

from leaderboard.figures import figures
from leaderboard.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, Interval, bootstrap_ci, rank_with_ties
from scoring.aggregation import ScoredResult, aggregate

SCORES = [12.0, 80.5, 33.3, 47.0, 0.0, 91.2, 55.5]


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), written out."""
    pos = (len(sorted_values) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def test_the_interval_matches_a_direct_loop_over_the_same_resamples():
    n = len(SCORES)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    draws = rng.integers(0, n, size=(BOOTSTRAP_RESAMPLES, n))
    means = sorted(sum(SCORES[i] for i in row) / n for row in draws.tolist())
    interval = bootstrap_ci(SCORES, confidence=0.95)
    assert interval is not None
    assert interval.mean == pytest.approx(sum(SCORES) / n, abs=1e-4)
    assert interval.low == pytest.approx(_percentile(means, 0.025), abs=1e-4)
    assert interval.high == pytest.approx(_percentile(means, 0.975), abs=1e-4)


def test_the_interval_converges_to_the_exact_bootstrap_distribution():
    values = [10.0, 40.0, 45.0, 90.0]
    # All 4^4 equally likely resamples: the exact bootstrap distribution of the mean.
    exact = sorted(sum(values[i] for i in combo) / 4 for combo in itertools.product(range(4), repeat=4))
    interval = bootstrap_ci(values, resamples=40_000, confidence=0.95)
    assert interval is not None
    assert interval.low == pytest.approx(_percentile(exact, 0.025), abs=1.5)
    assert interval.high == pytest.approx(_percentile(exact, 0.975), abs=1.5)
    assert interval.low < interval.mean < interval.high


def test_it_is_deterministic_and_degenerates_sensibly():
    assert bootstrap_ci(SCORES, confidence=0.95) == bootstrap_ci(list(SCORES), confidence=0.95)
    assert bootstrap_ci([], confidence=0.95) is None
    assert bootstrap_ci([42.0], confidence=0.95) == Interval(42.0, 42.0, 42.0)
    same = bootstrap_ci([7.0, 7.0, 7.0], confidence=0.95)
    assert same == Interval(7.0, 7.0, 7.0)


def test_overlapping_rows_share_a_rank():
    rows = [Interval(70, 60, 80), Interval(65, 55, 75), Interval(20, 10, 30), None]
    assert rank_with_ties(rows) == [1, 1, 3, None]


def test_board_figures_agree_with_the_scoring_aggregate():
    results = [ScoredResult(f"{t}__seed42", t, lv, 1, True, float(10 * i + j))
               for i, t in enumerate(["chem.a", "chem.b", "math.c"]) for j, lv in enumerate(["b1", "b2", "b3", "b4"])]
    agg = aggregate(results)
    figs = figures(agg["tasks"])
    for level in ("b1", "b2", "b3", "b4"):
        assert figs[level] == pytest.approx(agg["levels"][level], abs=1e-3)
    assert figs["mean"] == pytest.approx(agg["overall"], abs=1e-3)
    assert figs["instances_scored"] == agg["results_counted"] == 12
    chem = figures(agg["tasks"], "chem")
    assert chem["task_count"] == 2 and chem["b1"] == pytest.approx(5.0)
    lo, hi = chem["intervals"]["b1"]
    assert lo == 0.0 and hi == 10.0
