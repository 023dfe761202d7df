"""Naive baseline: right names, shapes and dtypes, no trajectory optimisation.

Usage: python naive.py --workspace W
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    m = len(np.load(ws / "data" / "segment_times.npy"))
    nq = len(np.load(ws / "data" / "query_times.npy"))
    np.save(ws / "coefficients.npy", np.zeros((m, 3, 8)))
    for name in ("positions", "velocities", "accelerations"):
        np.save(ws / f"{name}.npy", np.zeros((nq, 3)))
    np.save(ws / "snap_cost.npy", np.zeros(3))


if __name__ == "__main__":
    main()
