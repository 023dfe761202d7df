"""Naive baseline: right file names, shapes and dtypes, no simulation."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ws = ap.parse_args().workspace
    cfg = json.loads((ws / "data" / "config.json").read_text(encoding="utf-8"))
    n_obs = len(cfg["observation_times"])
    s0 = int(cfg["initial_counts"]["S"])
    np.save(ws / "product_moments.npy", np.zeros((n_obs, 2), dtype=np.float64))
    np.save(ws / "product_distribution.npy", np.full(s0 + 1, 1.0 / (s0 + 1), dtype=np.float64))
    np.save(ws / "completion_time.npy", np.zeros(2, dtype=np.float64))


if __name__ == "__main__":
    main()
