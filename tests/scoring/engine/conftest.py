from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from .transit_task import TRANSIT_CUSTOM_SCORER, TRANSIT_EVAL, TRANSIT_META, write_csv, write_yaml


@pytest.fixture
def make_task(tmp_path: Path) -> Callable[..., Path]:
    """Build a split-layout task dir; ``evaluation`` may be a full task_eval dict or just the evaluation."""

    def build(
        evaluation: dict[str, Any] | None = None,
        *,
        meta: dict[str, Any] | None = None,
        task_eval: dict[str, Any] | None = None,
        custom: str | None = None,
        name: str = "demo_task",
    ) -> Path:
        task_dir = tmp_path / "tasks" / "math" / name
        task_dir.mkdir(parents=True)
        meta = meta or {
            "id": f"math.{name}",
            "name": "Demo",
            "version": "1.0",
            "status": "test",
            "domain": "math",
            "output": {"files": [{"name": "out.npy", "type": "data"}]},
        }
        write_yaml(task_dir / "task_meta.yaml", meta)
        if task_eval is None and evaluation is not None:
            task_eval = {"task_id": meta["id"], "evaluation": evaluation}
        if task_eval is not None:
            write_yaml(task_dir / "task_eval.yaml", task_eval)
        if custom is not None:
            (task_dir / "custom_scorer.py").write_text(textwrap.dedent(custom), encoding="utf-8")
        for level in ("b1", "b2", "b3", "b4"):
            (task_dir / f"prompt_{level}.md").write_text(f"Prompt {level}\n", encoding="utf-8")
        return task_dir

    return build


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    """Empty prediction dir and a reference dir holding one placeholder file."""
    pred, ref = tmp_path / "pred", tmp_path / "ref"
    pred.mkdir()
    ref.mkdir()
    (ref / "placeholder_ref.txt").write_text("x", encoding="utf-8")
    return pred, ref


@pytest.fixture
def transit_instance(tmp_path: Path, make_task: Callable[..., Path]) -> dict[str, Any]:
    """The §2.14 worked example: a prediction worth 75.417 with one soft gate failure."""
    task_dir = tmp_path / "tasks" / "astronomy" / "toy_transit_fit"
    task_dir.mkdir(parents=True)
    write_yaml(task_dir / "task_meta.yaml", TRANSIT_META)
    write_yaml(task_dir / "task_eval.yaml", TRANSIT_EVAL)
    (task_dir / "custom_scorer.py").write_text(TRANSIT_CUSTOM_SCORER, encoding="utf-8")

    pred, ref = tmp_path / "pred", tmp_path / "ref"
    (pred / "data").mkdir(parents=True)
    ref.mkdir()
    n_lc, n_t = 4, 8
    rng = np.random.default_rng(0)
    model_ref = 0.99 + 0.01 * rng.random((n_lc, n_t))
    np.save(ref / "model_flux_ref.npy", model_ref)
    np.save(pred / "model_flux.npy", model_ref * 1.045)  # every curve off by exactly 4.5 %
    np.save(pred / "data" / "flux.npy", model_ref)
    (pred / "fit.py").write_text("import numpy as np\nimport batman\n", encoding="utf-8")
    t0_ref = [0.5, 1.5, 2.5, 3.5]
    depth_ref = [0.010, 0.020, 0.030, 0.040]
    write_csv(ref / "params_ref.csv", ["curve", "t0", "depth"], [[f"c{i}", t0_ref[i], depth_ref[i]] for i in range(4)])
    t0_pred = [0.5, 1.5 + 1 / 1440, 2.5, 3.5 + 10 / 1440]  # last curve 10 minutes off
    depth_pred = [d * 1.031 for d in depth_ref]
    write_csv(pred / "params.csv", ["curve", "t0", "depth"], [[f"c{i}", t0_pred[i], depth_pred[i]] for i in range(4)])
    return {"task_dir": task_dir, "pred": pred, "ref": ref, "params": {"n_lc": n_lc, "n_t": n_t, "seed": 1}}
