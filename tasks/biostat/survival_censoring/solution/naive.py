"""Naive baseline: right file names, shapes and dtypes, no survival analysis."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ws = ap.parse_args().workspace
    n = len(json.loads((ws / "data" / "analysis.json").read_text(encoding="utf-8"))["evaluation_times_weeks"])
    np.save(ws / "km_estimates.npy", np.ones((2, n), dtype=np.float64))
    np.save(ws / "km_standard_errors.npy", np.zeros((2, n), dtype=np.float64))
    np.save(ws / "median_survival.npy", np.zeros(2, dtype=np.float64))
    np.save(ws / "logrank.npy", np.array([0.0, 1.0], dtype=np.float64))
    np.save(ws / "cox_model.npy", np.zeros(2, dtype=np.float64))


if __name__ == "__main__":
    main()
