"""Reference solver for the Rb-Sr isochron task (agent-style, independent of the generator).

The best line with correlated errors in both coordinates minimises
S(b) = sum_i W_i(b) (Y_i - b X_i - a(b))^2 with W_i(b) = 1/(sX_i^2 b^2 - 2 b rho sX sY + sY_i^2)
and a(b) the W-weighted intercept (Titterington & Halliday 1979).  S(b) is minimised
directly (bounded Brent search around the OLS slope), then York's (2004) standard-error
formula is applied at the minimum.

Usage: python solve.py --workspace W
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar


def weights(b: float, sx, sy, rho):
    return 1.0 / (sx**2 * b * b - 2.0 * b * rho * sx * sy + sy**2)


def misfit(b: float, x, sx, y, sy, rho) -> float:
    w = weights(b, sx, sy, rho)
    a = np.sum(w * (y - b * x)) / np.sum(w)
    return float(np.sum(w * (y - b * x - a) ** 2))


def fit(x, sx, y, sy, rho) -> tuple[float, float, float, float]:
    b0 = np.polyfit(x, y, 1)[0]
    span = max(abs(b0), 1e-6)
    res = minimize_scalar(misfit, bounds=(b0 - span, b0 + span), args=(x, sx, y, sy, rho), method="bounded",
                          options={"xatol": 1e-16 * span + 1e-18, "maxiter": 2000})
    b = float(res.x)
    w = weights(b, sx, sy, rho)
    xbar, ybar = np.sum(w * x) / np.sum(w), np.sum(w * y) / np.sum(w)
    a = ybar - b * xbar
    # York (2004) eqs. (13)-(15): adjusted x values and the slope variance
    u, v = x - xbar, y - ybar
    beta = w * (u * sy**2 + b * v * sx**2 - (b * u + v) * rho * sx * sy)
    xa = xbar + beta
    xa_bar = np.sum(w * xa) / np.sum(w)
    sigma_b = 1.0 / np.sqrt(np.sum(w * (xa - xa_bar) ** 2))
    mswd = misfit(b, x, sx, y, sy, rho) / (len(x) - 2)
    return b, a, float(sigma_b), mswd


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
                [float(row[k]) for k in ("X_rb87_sr86", "sigma_X", "Y_sr87_sr86", "sigma_Y", "rho_XY")])
    out = []
    for name in consts["suites"]:
        d = np.array(by_suite[name])
        b, a, sb, mswd = fit(d[:, 0], d[:, 1], d[:, 2], d[:, 3], d[:, 4])
        out.append((np.log1p(b) / lam / 1e6, a, sb / ((1 + b) * lam) / 1e6, mswd))
    res = np.array(out, dtype=np.float64)
    for j, name in enumerate(("age_ma", "initial_ratio", "age_sigma_ma", "mswd")):
        np.save(ws / f"{name}.npy", res[:, j].copy())


if __name__ == "__main__":
    main()
