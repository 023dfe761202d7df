"""Naive baseline: correct file names, shapes and dtypes, no power flow (flat start
voltages, zero branch flows, scheduled generator outputs with zero reactive power).

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
    case = json.loads((ws / "data" / "case.json").read_text())
    n = len(case["buses"])
    np.save(ws / "voltage_magnitude.npy", np.ones(n))
    np.save(ws / "voltage_angle_deg.npy", np.zeros(n))
    np.save(ws / "branch_flows.npy", np.zeros((len(case["branches"]), 4)))
    np.save(ws / "generator_output.npy", np.array([[g["pg_mw"], 0.0] for g in case["generators"]]))


if __name__ == "__main__":
    main()
