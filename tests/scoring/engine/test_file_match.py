from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from scoring.engine.scorers.file_match import FileMatchScorer


def run(pred: Path, checks: list, mode: str | None = None, weight: float = 10.0):
    config: dict = {"checks": checks, "weight": weight}
    if mode:
        config["scoring_mode"] = mode
    return FileMatchScorer().score(pred, pred, config)


@pytest.fixture
def pred(tmp_path: Path) -> Path:
    np.save(tmp_path / "a.npy", np.zeros((2, 3)))
    (tmp_path / "notes.txt").write_text("hi")
    return tmp_path


def test_existence_shape_and_dtype_pass(pred: Path) -> None:
    result = run(pred, [{"file": "notes.txt"}, {"file": "a.npy", "shape": [2, 3], "dtype": "float64"}])
    assert result.passed and result.score == 10.0
    assert result.details["checks"][1]["actual_shape"] == [2, 3]


@pytest.mark.parametrize("shape", [[2, 3], "2,3", "{2,3}"])
def test_shape_forms(pred: Path, shape) -> None:
    assert run(pred, [{"file": "a.npy", "shape": shape}]).passed


def test_int_shape_means_one_dimension(tmp_path: Path) -> None:
    np.save(tmp_path / "v.npy", np.zeros(5))
    assert run(tmp_path, [{"file": "v.npy", "shape": 5}]).passed
    assert not run(tmp_path, [{"file": "v.npy", "shape": 4}]).passed


def test_wrong_shape_fails_before_dtype(pred: Path) -> None:
    result = run(pred, [{"file": "a.npy", "shape": [3, 2], "dtype": "float32"}])
    assert not result.passed and result.score == 0.0
    assert result.message == "a.npy: shape (2, 3) != expected (3, 2)"


def test_dtype_must_match_exactly(pred: Path) -> None:
    result = run(pred, [{"file": "a.npy", "dtype": "float32"}])
    assert result.message == "a.npy: dtype float64 != expected float32"


def test_shape_and_dtype_are_ignored_for_non_npy(pred: Path) -> None:
    assert run(pred, [{"file": "notes.txt", "shape": [9, 9], "dtype": "int8"}]).passed


def test_missing_file(pred: Path) -> None:
    result = run(pred, [{"file": "gone.npy"}])
    assert result.message == "Missing file: gone.npy" and result.score == 0.0


def test_pickled_npy_is_refused_with_a_clear_reason(tmp_path: Path) -> None:
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    (tmp_path / "raw.npy").write_bytes(pickle.dumps([1, 2, 3]))
    result = run(tmp_path, [{"file": "obj.npy", "shape": [1]}, {"file": "raw.npy", "dtype": "int64"}], "per_check")
    assert result.score == 0.0
    messages = [c["message"] for c in result.details["checks"]]
    assert messages[0] == "obj.npy: refused to load pickled/object data (allow_pickle=False)"
    assert messages[1] == "raw.npy: refused to load pickled/object data (allow_pickle=False)"


def test_per_check_scores_fraction(pred: Path) -> None:
    result = run(pred, [{"file": "notes.txt"}, {"file": "x"}, {"file": "y"}, {"file": "a.npy"}], "per_check", 8.0)
    assert result.score == pytest.approx(4.0)
    assert result.passed is False
    assert result.message == "Missing file: x; Missing file: y"


def test_empty_checks_earn_full_weight(pred: Path) -> None:
    assert run(pred, [], "per_check").score == 10.0
    assert run(pred, []).score == 10.0


def test_unknown_scoring_mode_raises(pred: Path) -> None:
    with pytest.raises(ValueError, match="Unknown scoring_mode"):
        run(pred, [{"file": "notes.txt"}], "majority")


def test_no_nan_inf_only_looks_at_top_level_npy(tmp_path: Path) -> None:
    np.save(tmp_path / "ok.npy", np.ones(3))
    (tmp_path / "sub").mkdir()
    np.save(tmp_path / "sub" / "bad.npy", np.array([np.nan]))
    np.save(tmp_path / "labels.npy", np.array(["a", "b"]))  # isnan unsupported → skipped
    (tmp_path / "broken.npy").write_bytes(b"garbage")  # unloadable → skipped
    assert run(tmp_path, [{"check": "no_nan_inf"}]).passed
    np.save(tmp_path / "nan.npy", np.array([1.0, np.inf]))
    result = run(tmp_path, [{"check": "no_nan_inf"}])
    assert not result.passed and "nan.npy" in result.message


def test_value_range_is_inclusive(tmp_path: Path) -> None:
    np.save(tmp_path / "v.npy", np.array([0.0, 0.5, 1.5]))
    assert run(tmp_path, [{"check": "value_range", "file": "v.npy", "min": 0.0, "max": 1.5}]).passed
    assert not run(tmp_path, [{"check": "value_range", "file": "v.npy", "max": 1.4}]).passed
    assert not run(tmp_path, [{"check": "value_range", "file": "v.npy", "min": 0.1}]).passed
    assert not run(tmp_path, [{"check": "value_range", "min": 0}]).passed  # no file key
    assert not run(tmp_path, [{"check": "value_range", "file": "absent.npy"}]).passed


def test_value_range_with_nan_fails(tmp_path: Path) -> None:
    np.save(tmp_path / "v.npy", np.array([0.1, np.nan]))
    assert not run(tmp_path, [{"check": "value_range", "file": "v.npy", "min": 0.0, "max": 1.0}]).passed


def test_value_range_on_corrupt_file_is_a_zero_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "v.npy").write_bytes(b"not numpy")
    result = run(tmp_path, [{"check": "value_range", "file": "v.npy", "min": 0}])
    assert not result.passed and "unreadable for value_range" in result.message


def test_unknown_checks_fail(pred: Path) -> None:
    result = run(pred, [{"check": "is_sorted", "file": "a.npy"}, {"shape": [1]}], "per_check")
    assert result.score == 0.0
    assert "Unknown check type: is_sorted" in result.message
    assert "Unknown check" in result.details["checks"][1]["message"]
