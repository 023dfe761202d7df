from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

TRANSIT_CUSTOM_SCORER = textwrap.dedent(
    """
    from pathlib import Path
    import csv
    from ai4sci_bench.core.scorer import Scorer, register_scorer
    from ai4sci_bench.core.types import ScoreDetail

    @register_scorer("transit_timing_score")
    class TransitTiming(Scorer):
        def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
            w = float(config.get("weight", 1.0))
            def rows(p):
                with open(p, newline="", encoding="utf-8") as fh:
                    return {r["curve"]: float(r["t0"]) for r in csv.DictReader(fh)}
            try:
                ref = rows(ref_dir / config.get("ref_file", "params_ref.csv"))
            except Exception as exc:
                return ScoreDetail("transit_timing_score", 0.0, w, False, {"error": str(exc)}, "reference unreadable")
            try:
                got = rows(pred_dir / config.get("pred_file", "params.csv"))
            except Exception as exc:
                return ScoreDetail("transit_timing_score", 0.0, w, False, {"error": str(exc)}, "prediction unreadable")
            tol = float(config.get("t0_tol_minutes", 2.0)) / 1440.0
            hits = sum(1 for k, v in ref.items() if k in got and abs(got[k] - v) <= tol)
            frac = hits / max(len(ref), 1)
            return ScoreDetail("transit_timing_score", w * frac, w, frac > 0, {"hits": hits, "n": len(ref)},
                               f"{hits}/{len(ref)} within tolerance")
    """
)

TRANSIT_META: dict[str, Any] = {
    "id": "astronomy.toy_transit_fit",
    "name": "Toy multi-light-curve transit fit",
    "version": "1.2",
    "status": "test",
    "domain": "astronomy",
    "runtime": {"python": ">=3.11", "packages": ["numpy>=1.26", " ", "matplotlib>=3.8"]},
    "prompts": {"b1": "prompt_b1.md", "b2": "prompt_b2.md", "b3": "prompt_b3.md", "b4": "prompt_b4.md"},
    "input": {"files": [{"name": "flux.npy", "type": "data"}]},
    "output": {
        "files": [
            {"name": "fit.py", "type": "code", "description": "end-to-end script"},
            {"name": "model_flux.npy", "type": "data", "description": "best-fit model per curve"},
            {"name": "params.csv", "type": "data"},
            {"name": "fit.png", "type": "figure"},
        ]
    },
}

TRANSIT_EVAL: dict[str, Any] = {
    "task_id": "astronomy.toy_transit_fit",
    "output": {"files": [{"name": "model_flux.npy", "shape": "{n_lc,n_t}", "dtype": "float64"}]},
    "evaluation": {
        "gates": [
            {
                "scorer": "file_match",
                "config": {
                    "checks": [
                        {"file": "fit.py"},
                        {"file": "model_flux.npy", "shape": "{n_lc,n_t}", "dtype": "float64"},
                        {"check": "no_nan_inf"},
                    ]
                },
            },
            {
                "scorer": "code_analysis",
                "severity": "soft",
                "config": {"target_file": "fit.py", "checks": [{"forbidden_imports": ["batman", "exoplanet"]}]},
            },
        ],
        "scoring": [
            {
                "scorer": "file_match",
                "weight": 10,
                "config": {
                    "scoring_mode": "per_check",
                    "checks": [
                        {"file": "params.csv"},
                        {"file": "fit.png"},
                        {"check": "value_range", "file": "model_flux.npy", "min": 0.0, "max": 1.5},
                    ],
                },
            },
            {
                "scorer": "numerical",
                "weight": 45,
                "config": {
                    "metric": "mean_relative_l2",
                    "pred_file": "model_flux.npy",
                    "ref_file": "model_flux_ref.npy",
                    "scoring": "linear_interpolation",
                    "full_score_threshold": 0.02,
                    "zero_score_threshold": 0.12,
                },
            },
            {
                "scorer": "numerical",
                "weight": 5,
                "config": {
                    "metric": "relative_error",
                    "pred_file": "params.csv",
                    "ref_file": "params_ref.csv",
                    "column": "depth",
                    "threshold": 0.05,
                },
            },
            {
                "scorer": "transit_timing_score",
                "weight": 40,
                "config": {"pred_file": "params.csv", "ref_file": "params_ref.csv", "t0_tol_minutes": 2.0},
            },
        ],
    },
    "generation": {
        "script": "generate_gt.py",
        "mode": "infinite",
        "parameters": {
            "n_lc": {"type": "int", "range": [2, 6], "default": 3},
            "n_t": {"type": "choice", "options": [512, 1024], "default": 512},
            "noise": {"type": "float", "range": [0.0001, 0.001], "default": 0.0005},
        },
        "timeout_seconds": 600,
    },
}


def write_yaml(path: Path, data: Any) -> None:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    lines = [",".join(header)] + [",".join(str(v) for v in row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


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
