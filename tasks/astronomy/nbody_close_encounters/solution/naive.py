"""Naive baseline: right file names, shapes and dtypes, no dynamics at all.

Reports the initial pair distances at t = 0, the initial state as the final state and a
zero energy. Usage: python solution/naive.py --workspace W
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ws = ap.parse_args().workspace
    ic = json.loads((ws / "data" / "initial_conditions.json").read_text(encoding="utf-8"))
    r0 = np.asarray(ic["positions"], dtype=float)
    v0 = np.asarray(ic["velocities"], dtype=float)
    pairs = list(itertools.combinations(range(r0.shape[0]), 2))
    np.save(ws / "min_separation.npy", np.array([np.linalg.norm(r0[j] - r0[i]) for i, j in pairs]))
    np.save(ws / "min_time.npy", np.zeros(len(pairs)))
    np.save(ws / "final_state.npy", np.hstack([r0, v0]))
    np.save(ws / "energy.npy", np.zeros(2))


if __name__ == "__main__":
    main()
