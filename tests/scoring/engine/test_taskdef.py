from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from scoring.engine import (
    TaskDefinitionError,
    anonymised_task_id,
    declared_outputs,
    instance_id_for_params,
    instance_id_for_seed,
    load_task,
    public_task_eval,
    sample_params,
)

from .transit_task import TRANSIT_EVAL, TRANSIT_META, write_yaml


@pytest.fixture
def transit_dir(tmp_path: Path) -> Path:
    task_dir = tmp_path / "toy_transit_fit"
    task_dir.mkdir()
    write_yaml(task_dir / "task_meta.yaml", TRANSIT_META)
    write_yaml(task_dir / "task_eval.yaml", TRANSIT_EVAL)
    return task_dir


def test_split_layout_merges_eval_into_meta(transit_dir: Path) -> None:
    task = load_task(transit_dir)
    assert task["id"] == "astronomy.toy_transit_fit"
    assert "task_id" not in task  # back-reference only
    assert task["evaluation"] == TRANSIT_EVAL["evaluation"]
    flux = next(f for f in task["output"]["files"] if f["name"] == "model_flux.npy")
    assert flux == {
        "name": "model_flux.npy",
        "type": "data",
        "description": "best-fit model per curve",
        "shape": "{n_lc,n_t}",
        "dtype": "float64",
    }
    assert [f["name"] for f in task["output"]["files"]] == ["fit.py", "model_flux.npy", "params.csv", "fit.png"]


def test_private_keys(transit_dir: Path) -> None:
    task = load_task(transit_dir)
    assert task["_task_dir"] == transit_dir
    assert task["_task_yaml"] == transit_dir / "task_meta.yaml"
    assert task["_task_eval_yaml"] == transit_dir / "task_eval.yaml"
    assert task["_generation_mode"] == "infinite"
    assert task["_generation_precomputed"] is False
    assert task["_generation_settings"] == []
    assert task["_runtime_python"] == ">=3.11"
    assert task["_runtime_packages"] == ["numpy>=1.26", "matplotlib>=3.8"]


def test_unknown_eval_output_entry_is_appended(tmp_path: Path) -> None:
    write_yaml(tmp_path / "task_meta.yaml", {"id": "a.b", "output": {"files": [{"name": "x.npy", "type": "data"}]}})
    write_yaml(tmp_path / "task_eval.yaml", {"output": {"files": [{"name": "y.npy", "shape": [2]}]}})
    assert load_task(tmp_path)["output"]["files"] == [
        {"name": "x.npy", "type": "data"},
        {"name": "y.npy", "shape": [2]},
    ]


def test_legacy_task_yaml_wins(transit_dir: Path) -> None:
    write_yaml(transit_dir / "task.yaml", {"id": "legacy.one", "evaluation": {"scoring": []}})
    task = load_task(transit_dir)
    assert task["id"] == "legacy.one"
    assert task["_task_eval_yaml"] is None


def test_meta_only_loads_without_evaluation(tmp_path: Path) -> None:
    write_yaml(tmp_path / "task_meta.yaml", {"id": "a.b"})
    assert "evaluation" not in load_task(tmp_path)


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({}, "neither task.yaml nor task_meta.yaml"),
        ({"task_meta.yaml": "- a\n- b\n"}, "must be a mapping"),
        ({"task_meta.yaml": "id: [unclosed\n"}, "cannot parse YAML"),
        ({"task_meta.yaml": "id: a.b\nruntime: {packages: numpy}\n"}, "runtime.packages must be a list"),
    ],
)
def test_load_errors(tmp_path: Path, files: dict[str, str], message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    with pytest.raises(TaskDefinitionError, match=message):
        load_task(tmp_path)


def _with_seed_param() -> dict:
    generation = dict(TRANSIT_EVAL["generation"])
    generation["parameters"] = {**generation["parameters"], "seed": {"type": "int", "range": [0, 2**31 - 1]}}
    return {"generation": generation}


def test_sample_params_reproduces_contract_example() -> None:
    task = _with_seed_param()
    assert sample_params(task, 42) == {"n_lc": 2, "n_t": 512, "noise": 0.0008, "seed": 958682846}
    assert sample_params(task, 31415) == {"n_lc": 6, "n_t": 1024, "noise": 0.0009, "seed": 182889174}


def test_sample_params_stream_is_seed_plus_index() -> None:
    task = _with_seed_param()
    assert sample_params(task, 42, idx=1) == sample_params(task, 43)
    assert sample_params(task, 42, idx=1) != sample_params(task, 42)


def test_undeclared_seed_is_drawn_after_the_parameters() -> None:
    rng = random.Random(42)
    rng.randint(2, 6), rng.choice([512, 1024]), rng.uniform(0.0001, 0.001)
    assert sample_params({"generation": TRANSIT_EVAL["generation"]}, 42)["seed"] == rng.randint(0, 2**31 - 1)


def test_unknown_parameter_types_are_skipped() -> None:
    task = {
        "generation": {"parameters": {"path": {"type": "str", "default": "x"}, "k": {"type": "int", "range": [1, 1]}}}
    }
    params = sample_params(task, 7)
    assert set(params) == {"k", "seed"} and params["k"] == 1


def test_finite_mode_picks_a_shuffled_setting() -> None:
    settings = [{"id": f"s{i}", "size": i} for i in range(5)]
    task = {"generation": {"mode": "finite", "settings": settings}}
    order = list(range(5))
    random.Random(42).shuffle(order)
    assert [sample_params(task, 42, idx)["size"] for idx in range(6)] == order + order[:1]
    assert "id" not in sample_params(task, 42)


def test_identities() -> None:
    assert instance_id_for_seed("math.roots_demo", 31415) == "math.roots_demo__seed31415"
    expected = "task_" + hashlib.sha256(b"math.roots_demo").hexdigest()[:12]
    assert anonymised_task_id("math.roots_demo") == expected
    assert len(expected) == 17
    assert (
        instance_id_for_params("astronomy.toy_transit_fit", {"n_lc": 2, "n_t": 512, "noise": 0.0008, "seed": 958682846})
        == "astronomy.toy_transit_fit__n_lc2_n_t512_noise0.00_seed958682846"
    )
    long_id = instance_id_for_params("a.b", {f"parameter_{i}": i for i in range(12)})
    assert len(long_id.split("__", 1)[1]) == 60 + 1 + 8


def test_declared_outputs_are_name_and_type_only(transit_dir: Path) -> None:
    assert declared_outputs(load_task(transit_dir)) == [
        {"name": "fit.py", "type": "code"},
        {"name": "model_flux.npy", "type": "data"},
        {"name": "params.csv", "type": "data"},
        {"name": "fit.png", "type": "figure"},
    ]


def test_public_task_eval_never_contains_generation(transit_dir: Path) -> None:
    public = public_task_eval(transit_dir)
    assert set(public) == {"task_id", "output", "evaluation"}
    assert public["task_id"] == "astronomy.toy_transit_fit"
    assert public["output"] == {"files": [{"name": "model_flux.npy", "shape": "{n_lc,n_t}", "dtype": "float64"}]}
    assert "generate_gt" not in repr(public)


def test_public_task_eval_from_legacy_layout(tmp_path: Path) -> None:
    write_yaml(
        tmp_path / "task.yaml",
        {
            "id": "a.b",
            "output": {"files": [{"name": "x.npy", "type": "data", "shape": [3], "description": "d"}]},
            "evaluation": {"gates": [], "scoring": []},
            "generation": {"script": "generate_gt.py"},
        },
    )
    public = public_task_eval(tmp_path)
    assert public == {
        "task_id": "a.b",
        "output": {"files": [{"name": "x.npy", "shape": [3]}]},
        "evaluation": {"gates": [], "scoring": []},
    }
