"""Naive baseline: correct file names, shapes and dtypes, no regression
(zero ages, a textbook bulk-earth initial ratio, zero uncertainties, MSWD of 1).

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
    n = len(json.loads((ws / "data" / "constants.json").read_text())["suites"])
    np.save(ws / "age_ma.npy", np.zeros(n))
    np.save(ws / "initial_ratio.npy", np.full(n, 0.7045))
    np.save(ws / "age_sigma_ma.npy", np.zeros(n))
    np.save(ws / "mswd.npy", np.ones(n))


if __name__ == "__main__":
    main()
