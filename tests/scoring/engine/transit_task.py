"""The toy transit task the engine tests build on disk, and the writers they share."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

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
