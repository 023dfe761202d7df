"""Naive baseline: right names, shapes and dtypes, no chemistry.

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
    info = json.loads((ws / "data" / "systems.json").read_text())
    n_sys, n_b = len(info["systems"]), len(info["basis_sets"])
    np.save(ws / "cbs_interaction.npy", np.zeros((n_sys, 3)))
    for name in ("cp_interaction", "raw_interaction", "bsse"):
        np.save(ws / f"{name}.npy", np.zeros((n_sys, n_b)))


if __name__ == "__main__":
    main()
