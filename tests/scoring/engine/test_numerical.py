from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scoring.engine.scorers.numerical import NumericalScorer, band_fraction


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    pred, ref = tmp_path / "pred", tmp_path / "ref"
    pred.mkdir()
    ref.mkdir()
    return pred, ref


def score(dirs, pred_arr, ref_arr, **config):
    pred, ref = dirs
    if pred_arr is not None:
        np.save(pred / "x.npy", np.asarray(pred_arr))
    np.save(ref / "x_ref.npy", np.asarray(ref_arr))
    config.setdefault("weight", 10.0)
    return NumericalScorer().score(pred, ref, {"pred_file": "x.npy", "ref_file": "x_ref.npy", **config})


@pytest.mark.parametrize(
    ("error", "expected"),
    [(0.01, 1.0), (0.02, 1.0), (0.045, 0.75), (0.07, 0.5), (0.12, 0.0), (0.5, 0.0)],
)
def test_linear_interpolation_band(error: float, expected: float) -> None:
    config = {"scoring": "linear_interpolation", "full_score_threshold": 0.02, "zero_score_threshold": 0.12}
    fraction, passed, info = band_fraction(error, config)
    assert fraction == pytest.approx(expected)
    assert passed is True and info["scoring_mode"] == "linear_interpolation"


def test_band_modes_in_order() -> None:
    assert band_fraction(float("nan"), {"scoring": "linear_interpolation"})[:2] == (0.0, False)
    assert band_fraction(0.04, {"threshold": 0.05})[:2] == (1.0, True)
    assert band_fraction(0.06, {"threshold": 0.05})[:2] == (0.0, False)
    assert band_fraction(0.25, {})[0] == pytest.approx(0.75)
    assert band_fraction(1.5, {})[0] == 0.0
    assert band_fraction(0.25, {"scoring": "step"})[2]["scoring_mode"] == "proportional"


def test_relative_l2_linear(dirs) -> None:
    ref = np.array([3.0, 4.0])  # norm 5
    pred = ref + np.array([0.3, 0.0])  # error 0.3/5 = 0.06
    result = score(
        dirs, pred, ref, scoring="linear_interpolation", full_score_threshold=0.01, zero_score_threshold=0.11
    )
    assert result.details["relative_l2"] == pytest.approx(0.06)
    assert result.score == pytest.approx(5.0)
    assert result.scorer_name == "numerical:relative_l2"
    assert result.message.startswith("relative_l2=0.060000; score=5.0000; linear interpolation")


def test_relative_l2_zero_reference_uses_prediction_norm(dirs) -> None:
    result = score(dirs, [0.3, 0.4], [0.0, 0.0])
    assert result.details["relative_l2"] == pytest.approx(0.5)
    assert result.score == pytest.approx(5.0)  # proportional


def test_relative_l2_nan_prediction_scores_zero(dirs) -> None:
    result = score(dirs, [np.nan, 1.0], [1.0, 1.0], threshold=0.1)
    assert result.score == 0.0 and result.passed is False
    assert result.details["scoring_mode"] == "non_finite_error"


def test_relative_l2_nan_policy_omit(dirs) -> None:
    result = score(dirs, [np.nan, 2.0, 4.0], [1.0, 2.0, 4.0], nan_policy="omit", threshold=1e-9)
    assert result.score == 10.0


def test_mean_relative_l2_per_row(dirs) -> None:
    ref = np.array([[1.0, 0.0], [0.0, 2.0]])
    pred = np.array([[1.1, 0.0], [0.0, 2.6]])  # 0.1 and 0.3 → mean 0.2
    result = score(dirs, pred, ref, metric="mean_relative_l2")
    assert result.details["per_frame_errors"] == pytest.approx([0.1, 0.3])
    assert result.score == pytest.approx(8.0)


def test_per_frame_relative_l2_with_alignment(dirs) -> None:
    frame = np.zeros((6, 6))
    frame[2, 3] = 1.0
    ref = np.stack([frame, frame])
    pred = np.stack([np.roll(frame, 1, axis=0), np.roll(frame, 2, axis=1)])
    config = {"metric": "per_frame_relative_l2", "alignment": {"enabled": True, "max_shift": 1}}
    result = score(dirs, pred, ref, **config)
    assert result.details["frame_0"] == {"rel_err": 0.0, "shift": [-1, 0], "pts": 5.0}
    assert result.details["frame_1"]["pts"] == 0.0  # shift of 2 is outside max_shift
    assert result.score == 5.0 and result.passed is True


def test_per_frame_item_score_can_exceed_weight(dirs) -> None:
    ref = np.ones((3, 2))
    result = score(dirs, ref, ref, metric="per_frame_relative_l2", per_item_score=5.0)
    assert result.score == 15.0 and result.max_score == 10.0


def test_rmse_threshold(dirs) -> None:
    result = score(dirs, [1.0, 3.0], [0.0, 3.0], metric="rmse", threshold=0.8)
    assert result.details["rmse"] == pytest.approx(np.sqrt(0.5))
    assert result.score == 10.0


def test_mape_skips_zero_reference(dirs) -> None:
    result = score(dirs, [1.1, 5.0, 2.0], [1.0, 0.0, 2.0], metric="mape")
    assert result.details["mape"] == pytest.approx(0.05)
    assert result.score == pytest.approx(9.5)


def test_relative_error_default_tolerance_is_binary(dirs) -> None:
    result = score(dirs, [1.00005, 0.0], [1.0, 0.0], metric="relative_error")
    assert result.score == 10.0 and result.details["threshold"] == 1e-4
    result = score(dirs, [1.001, 0.0], [1.0, 0.0], metric="relative_error")
    assert result.score == 0.0


def test_relative_error_zero_reference_denominator_is_one(dirs) -> None:
    result = score(dirs, [0.3], [0.0], metric="relative_error", threshold=0.5)
    assert result.details["max_relative_error"] == pytest.approx(0.3)
    assert result.score == 10.0


def test_absolute_error_and_exact_match(dirs) -> None:
    assert score(dirs, [1.0, 2.0000001], [1.0, 2.0], metric="absolute_error").score == 10.0
    assert score(dirs, [1.0, 2.01], [1.0, 2.0], metric="absolute_error", tolerance=1e-3).score == 0.0
    assert score(dirs, np.array([1, 2], dtype=np.int32), [1.0, 2.0], metric="exact_match").score == 10.0
    assert score(dirs, [1.0, np.nan], [1.0, np.nan], metric="exact_match").score == 0.0


def test_cosine_and_correlation(dirs) -> None:
    assert score(dirs, [2.0, 4.0], [1.0, 2.0], metric="cosine_similarity").score == 10.0
    assert score(dirs, [0.0, 0.0], [1.0, 2.0], metric="cosine_similarity").details["cosine_similarity"] == 0.0
    result = score(dirs, [1.0, 2.0, 3.0], [2.0, 4.0, 6.5], metric="correlation")
    assert result.score == 10.0
    r = np.corrcoef([1.0, 3.0, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0])[0, 1]  # 0.8
    result = score(
        dirs, [1.0, 3.0, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0], metric="correlation", scoring="linear_interpolation"
    )
    assert result.score == pytest.approx(10 * (r - 0.5) / 0.45)
    result = score(dirs, [1.0, 1.0], [1.0, 2.0], metric="correlation", scoring="linear_interpolation")
    assert result.score == 0.0  # constant prediction → NaN correlation


def test_max_ratio_reads_only_the_prediction(tmp_path: Path) -> None:
    np.save(tmp_path / "ke.npy", np.array([2.0, 3.0, 3.9]))
    result = NumericalScorer().score(
        tmp_path, tmp_path / "nowhere", {"metric": "max_ratio", "file": "ke.npy", "weight": 1}
    )
    assert result.details["ke_ratio"] == 1.95 and result.score == 1.0
    np.save(tmp_path / "ke.npy", np.array([0.0, 1.0]))
    result = NumericalScorer().score(tmp_path, tmp_path, {"metric": "max_ratio", "file": "ke.npy", "weight": 1})
    assert result.score == 0.0
    np.save(tmp_path / "ke.npy", np.ones((2, 2)))
    result = NumericalScorer().score(tmp_path, tmp_path, {"metric": "max_ratio", "file": "ke.npy", "weight": 1})
    assert result.message.startswith("Scoring error:")


def test_csv_column_comparison(dirs) -> None:
    pred, ref = dirs
    (pred / "p.csv").write_text("curve,depth\nc0,0.0103\nc1,0.0206\n")
    (ref / "p_ref.csv").write_text("curve,depth\nc0,0.01\nc1,0.02\n")
    config = {
        "metric": "relative_error",
        "pred_file": "p.csv",
        "ref_file": "p_ref.csv",
        "column": "depth",
        "threshold": 0.05,
        "weight": 5,
    }
    result = NumericalScorer().score(pred, ref, config)
    assert result.details["max_relative_error"] == pytest.approx(0.03)
    assert result.score == 5.0
    del config["column"]
    assert "requires 'column'" in NumericalScorer().score(pred, ref, config).message


def test_csv_missing_column_is_a_plain_zero(dirs) -> None:
    pred, ref = dirs
    (pred / "p.csv").write_text("curve,depth_pct\nc0,1.0\n")
    (ref / "p_ref.csv").write_text("curve,depth\nc0,0.01\n")
    config = {"metric": "rmse", "pred_file": "p.csv", "ref_file": "p_ref.csv", "column": "depth", "weight": 5}
    result = NumericalScorer().score(pred, ref, config)
    assert result.score == 0.0 and "no column 'depth'" in result.message
    assert "scorer_internal_error" not in result.details


def test_row_selection(dirs) -> None:
    ref = np.array([[1.0, 1.0], [5.0, 5.0]])
    pred = np.array([[9.0, 9.0], [5.0, 5.0]])
    assert score(dirs, pred, ref, row=1, threshold=1e-9).score == 10.0
    assert score(dirs, pred, ref, row=0, threshold=1e-9).score == 0.0


def test_shape_mismatch_missing_file_and_pickles_are_plain_zeros(dirs) -> None:
    result = score(dirs, np.zeros((2, 3)), np.zeros((3, 2)))
    assert result.score == 0.0 and "Shape mismatch" in result.message
    pred, _ = dirs
    (pred / "x.npy").unlink()
    result = score(dirs, None, np.zeros(3))
    assert result.message == "Scoring error: x.npy: file not found"
    np.save(pred / "x.npy", np.array([object()], dtype=object), allow_pickle=True)
    result = score(dirs, None, np.zeros(1))
    assert result.message == "Scoring error: x.npy: refused to load pickled/object data (allow_pickle=False)"
    assert result.passed is False


def test_text_formats_are_not_numpy_files(dirs) -> None:
    pred, ref = dirs
    (pred / "x.txt").write_text("1 2 3\n")
    np.save(ref / "x_ref.npy", np.array([1.0, 2.0, 3.0]))
    result = NumericalScorer().score(pred, ref, {"pred_file": "x.txt", "ref_file": "x_ref.npy", "weight": 1})
    assert result.score == 0.0 and result.message.startswith("Scoring error:")


def test_unknown_metric(dirs) -> None:
    result = score(dirs, [1.0], [1.0], metric="wasserstein")
    assert result.message == "Unknown metric: wasserstein" and result.score == 0.0
    assert result.scorer_name == "numerical:wasserstein"


def test_complex_and_string_arrays(dirs) -> None:
    result = score(dirs, np.array(["a", "b"]), [1.0, 2.0])
    assert result.score == 0.0 and result.message.startswith("Scoring error:")
