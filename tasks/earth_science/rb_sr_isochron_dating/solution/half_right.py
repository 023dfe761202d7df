"""Half-right baseline: the right errors-in-both-variables fit, but the X-Y error
correlations are ignored (rho = 0) and the age uncertainty is inflated by sqrt(MSWD)
whenever MSWD > 1 (a "model 2" convention the task does not ask for).

Usage: python half_right.py --workspace W
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
from solve import fit


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    consts = json.loads((ws / "data" / "constants.json").read_text())
    lam = float(consts["lambda_rb87_per_year"])
    by_suite: dict[str, list[list[float]]] = {}
    with open(ws / "data" / "analyses.csv", newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            by_suite.setdefault(row["suite"], []).append(
                [float(row[k]) for k in ("X_rb87_sr86", "sigma_X", "Y_sr87_sr86", "sigma_Y")])
    out = []
    for name in consts["suites"]:
        x, sx, y, sy = np.array(by_suite[name]).T
        b, a, sb, mswd = fit(x, sx, y, sy, np.zeros_like(x))
        out.append((np.log1p(b) / lam / 1e6, a, sb * np.sqrt(max(mswd, 1.0)) / ((1 + b) * lam) / 1e6, mswd))
    res = np.array(out, dtype=np.float64)
    for j, name in enumerate(("age_ma", "initial_ratio", "age_sigma_ma", "mswd")):
        np.save(ws / f"{name}.npy", res[:, j].copy())


if __name__ == "__main__":
    main()
