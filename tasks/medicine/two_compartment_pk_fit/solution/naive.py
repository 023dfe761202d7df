"""Naive baseline: right file names, shapes and dtypes, no pharmacokinetics."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ws = ap.parse_args().workspace
    study = json.loads((ws / "data" / "study.json").read_text(encoding="utf-8"))
    n = len(study["subjects"])
    m = len(study["prediction_times_h"])
    np.save(ws / "pk_parameters.npy", np.zeros((n, 4), dtype=np.float64))
    np.save(ws / "half_lives.npy", np.zeros((n, 2), dtype=np.float64))
    np.save(ws / "auc.npy", np.zeros(n, dtype=np.float64))
    np.save(ws / "predicted_concentrations.npy", np.zeros((n, m), dtype=np.float64))


if __name__ == "__main__":
    main()
