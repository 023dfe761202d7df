"""Naive baseline: correct file names, shapes and dtypes, no physics.

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
    n_k = len(np.load(ws / "data" / "k_points.npy"))
    n_bins = len(np.load(ws / "data" / "dos_bin_edges.npy")) - 1
    n_t = len(np.load(ws / "data" / "temperatures.npy"))
    np.save(ws / "dispersion.npy", np.zeros((n_k, 2)))
    np.save(ws / "dos.npy", np.zeros(n_bins))
    np.save(ws / "heat_capacity.npy", np.zeros(n_t))
    np.save(ws / "summary.npy", np.zeros(5))


if __name__ == "__main__":
    main()
