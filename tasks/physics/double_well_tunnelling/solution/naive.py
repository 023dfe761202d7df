"""Naive baseline: correct file names, shapes and dtypes, no quantum mechanics
(harmonic-oscillator-like guesses for energies, a flat density, <x> = 0).

Usage: python naive.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    cfg = json.loads((ws / "data" / "potential.json").read_text())
    x = np.load(ws / "data" / "x_grid.npy")
    n = int(cfg["n_levels"])
    np.save(ws / "energies.npy", np.arange(1, n + 1, dtype=np.float64))
    np.save(ws / "densities.npy", np.full((n, len(x)), 1.0 / (x[-1] - x[0])))
    np.save(ws / "x_expectation.npy", np.zeros(n))


if __name__ == "__main__":
    main()
