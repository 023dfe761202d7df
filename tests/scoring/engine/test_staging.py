from __future__ import annotations

import os
from pathlib import Path

import pytest

from scoring.engine import StagingError, stage_prediction_dir


@pytest.fixture
def instance(tmp_path: Path) -> tuple[Path, Path]:
    data, outputs = tmp_path / "data", tmp_path / "run.outputs"
    (data / "sub").mkdir(parents=True)
    (data / "flux.npy").write_bytes(b"in")
    (data / "sub" / "t.csv").write_text("t\n1\n")
    (outputs / "results").mkdir(parents=True)
    (outputs / "fit.py").write_text("print(1)\n")
    (outputs / "results" / "model.npy").write_bytes(b"out")
    return data, outputs


def tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_stages_data_then_outputs_at_the_root(instance, tmp_path: Path) -> None:
    data, outputs = instance
    dest = stage_prediction_dir(data, outputs, tmp_path / "stage")
    assert tree(dest) == ["data/flux.npy", "data/sub/t.csv", "fit.py", "results/model.npy"]


def test_declared_filter(instance, tmp_path: Path) -> None:
    data, outputs = instance
    (outputs / "scratch.txt").write_text("undeclared")
    dest = stage_prediction_dir(data, outputs, tmp_path / "stage", declared=["fit.py", "results", "absent.npy"])
    assert tree(dest) == ["data/flux.npy", "data/sub/t.csv", "fit.py", "results/model.npy"]


def test_no_outputs_stages_data_only(instance, tmp_path: Path) -> None:
    data, _ = instance
    assert tree(stage_prediction_dir(data, None, tmp_path / "stage")) == ["data/flux.npy", "data/sub/t.csv"]


def test_refuses_an_output_that_overwrites_data(instance, tmp_path: Path) -> None:
    data, outputs = instance
    (outputs / "data").mkdir()
    (outputs / "data" / "flux.npy").write_bytes(b"tampered")
    with pytest.raises(StagingError, match="would overwrite instance input data/flux.npy"):
        stage_prediction_dir(data, outputs, tmp_path / "stage")
    assert (tmp_path / "stage" / "data" / "flux.npy").read_bytes() == b"in"


def test_refuses_an_output_file_named_like_a_data_directory(instance, tmp_path: Path) -> None:
    data, outputs = instance
    (outputs / "data").mkdir()
    (outputs / "data" / "sub").write_text("file where a directory is")
    with pytest.raises(StagingError, match="overwrite"):
        stage_prediction_dir(data, outputs, tmp_path / "stage")


def test_new_files_under_data_are_allowed(instance, tmp_path: Path) -> None:
    data, outputs = instance
    (outputs / "data").mkdir()
    (outputs / "data" / "derived.npy").write_bytes(b"new")
    assert "data/derived.npy" in tree(stage_prediction_dir(data, outputs, tmp_path / "stage"))


def test_refuses_symlinked_outputs(instance, tmp_path: Path) -> None:
    data, outputs = instance
    os.symlink("/etc/passwd", outputs / "leak.txt")
    with pytest.raises(StagingError, match="leak.txt is a symlink"):
        stage_prediction_dir(data, outputs, tmp_path / "stage")
    assert not (tmp_path / "stage" / "leak.txt").exists()


def test_refuses_symlinks_in_data(instance, tmp_path: Path) -> None:
    data, outputs = instance
    os.symlink(data / "flux.npy", data / "alias.npy")
    with pytest.raises(StagingError, match="symlink"):
        stage_prediction_dir(data, outputs, tmp_path / "stage")


def test_refuses_unsafe_declared_names(instance, tmp_path: Path) -> None:
    data, outputs = instance
    with pytest.raises(StagingError, match="not a safe relative path"):
        stage_prediction_dir(data, outputs, tmp_path / "stage", declared=["../escape.txt"])


def test_staging_error_is_missing_evaluator_input() -> None:
    assert StagingError.failure_kind == "missing_evaluator_input"
