"""Naive baseline: correct file names and dtypes, no root finding.

Reports d1*d2 copies of the origin, multiplicity one each, and claims every path is
regular. Usage: python solution/naive.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ws = ap.parse_args().workspace
    system = json.loads((ws / "data" / "system.json").read_text(encoding="utf-8"))
    n_paths = int(np.prod(system["degrees"]))
    np.save(ws / "roots.npy", np.zeros((n_paths, 2), dtype=np.complex128))
    np.save(ws / "multiplicities.npy", np.ones(n_paths, dtype=np.int64))
    np.save(ws / "path_counts.npy", np.array([n_paths, n_paths, 0, 0], dtype=np.int64))


if __name__ == "__main__":
    main()
