"""Half-right baseline: a correct minimum-snap solve (local-time monomial KKT system),
so positions, velocities and accelerations are right, but the coefficients are
reported in the raw-time monomial basis instead of normalised time, and the snap
cost is integrated in normalised time (the T^-7 Jacobian factor is forgotten).

Usage: python half_right.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from math import factorial
from pathlib import Path

import numpy as np


def row(t: float, r: int) -> np.ndarray:
    out = np.zeros(8)
    for j in range(r, 8):
        out[j] = factorial(j) / factorial(j - r) * t ** (j - r)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    wp = np.load(ws / "data" / "waypoints.npy")
    durs = np.load(ws / "data" / "segment_times.npy")
    tq = np.load(ws / "data" / "query_times.npy")
    bc = json.loads((ws / "data" / "boundary_conditions.json").read_text())
    m = len(durs)
    n = 8 * m

    q = np.zeros((n, n))
    for i, t in enumerate(durs):
        for j in range(4, 8):
            for k in range(4, 8):
                cj = factorial(j) / factorial(j - 4)
                ck = factorial(k) / factorial(k - 4)
                q[8 * i + j, 8 * i + k] = cj * ck * t ** (j + k - 7) / (j + k - 7)
    rows, rhs = [], []

    def add(entries: list, value) -> None:
        r = np.zeros(n)
        for seg, vec in entries:
            r[8 * seg : 8 * seg + 8] += vec
        rows.append(r)
        rhs.append(np.asarray(value, dtype=float) * np.ones(3))

    for i in range(m):
        add([(i, row(0.0, 0))], wp[i])
        add([(i, row(durs[i], 0))], wp[i + 1])
    for r, key in zip((1, 2, 3), ("velocity", "acceleration", "jerk"), strict=True):
        add([(0, row(0.0, r))], bc["start"][key])
        add([(m - 1, row(durs[-1], r))], bc["end"][key])
    for k in range(1, m):
        for r in (1, 2, 3):
            add([(k - 1, row(durs[k - 1], r)), (k, -row(0.0, r))], 0.0)
    a = np.array(rows)
    b = np.array(rhs)
    nc = len(a)
    kkt = np.block([[2 * q, a.T], [a, np.zeros((nc, nc))]])
    sol = np.linalg.solve(kkt, np.vstack([np.zeros((n, 3)), b]))[:n]
    c = sol.reshape(m, 8, 3)  # raw-time monomial coefficients

    knots = np.concatenate([[0.0], np.cumsum(durs)])
    seg = np.clip(np.searchsorted(knots, tq, side="right") - 1, 0, m - 1)
    for r, name in enumerate(("positions", "velocities", "accelerations")):
        vals = np.array([row(t - knots[s], r) @ c[s] for t, s in zip(tq, seg, strict=True)])
        np.save(ws / f"{name}.npy", vals)

    # wrong convention: raw-time coefficients, shape (M, 3, 8)
    np.save(ws / "coefficients.npy", c.transpose(0, 2, 1).copy())
    # wrong cost: integral over normalised time, missing the T^-7 Jacobian factor
    q_unit = np.zeros((8, 8))
    for j in range(4, 8):
        for k in range(4, 8):
            q_unit[j, k] = factorial(j) / factorial(j - 4) * factorial(k) / factorial(k - 4) / (j + k - 7)
    cost = np.zeros(3)
    for i, t in enumerate(durs):
        a_norm = c[i] * (t ** np.arange(8))[:, None]  # (8, 3) normalised-time coefficients
        cost += np.einsum("jd,jk,kd->d", a_norm, q_unit, a_norm)
    np.save(ws / "snap_cost.npy", cost)


if __name__ == "__main__":
    main()
