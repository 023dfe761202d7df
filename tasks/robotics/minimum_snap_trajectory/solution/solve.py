"""Reference solver (agent-style) for the minimum-snap trajectory task.

Independent of the generator: it uses the optimality conditions directly.  For
min int ||x''''||^2 with interpolated waypoints, the Euler-Lagrange equation
gives x^(8) = 0 on every segment (degree-7 polynomials) and the natural interior
conditions make x continuous up to its 6th derivative at interior waypoints.
With fixed start/end velocity, acceleration and jerk this is a square linear
system of 8M equations per axis.  It is written in normalised time
tau = (t - t_i)/T_i, equilibrated (row and column scaling) and solved with
LU + iterative refinement, which keeps it accurate despite segment durations
that span several decades.

Usage: python solve.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from math import factorial
from pathlib import Path

import numpy as np
from scipy.linalg import lu_factor, lu_solve


def drow(tau: float, r: int) -> np.ndarray:
    """Row of d^r/dtau^r of [1, tau, ..., tau^7]."""
    out = np.zeros(8)
    for j in range(r, 8):
        out[j] = factorial(j) / factorial(j - r) * tau ** (j - r)
    return out


def build_system(wp: np.ndarray, durs: np.ndarray, bc0: np.ndarray, bc1: np.ndarray):
    m = len(durs)
    n = 8 * m
    a = np.zeros((n, n))
    b = np.zeros((n, 3))
    row = 0

    def put(seg: int, coeffs: np.ndarray) -> None:
        a[row, 8 * seg : 8 * seg + 8] += coeffs

    for i in range(m):
        put(i, drow(0.0, 0))
        b[row] = wp[i]
        row += 1
        put(i, drow(1.0, 0))
        b[row] = wp[i + 1]
        row += 1
    for r in (1, 2, 3):  # physical derivative = T^-r d^r p/dtau^r
        put(0, drow(0.0, r))
        b[row] = bc0[r - 1] * durs[0] ** r
        row += 1
        put(m - 1, drow(1.0, r))
        b[row] = bc1[r - 1] * durs[m - 1] ** r
        row += 1
    for k in range(1, m):  # C^6 at interior knots, scaled by the shorter duration
        ts = min(durs[k - 1], durs[k])
        for r in range(1, 7):
            put(k - 1, drow(1.0, r) * (ts / durs[k - 1]) ** r)
            put(k, -drow(0.0, r) * (ts / durs[k]) ** r)
            row += 1
    assert row == n
    return a, b


def equilibrated_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    dr = np.ones(a.shape[0])
    dc = np.ones(a.shape[1])
    for _ in range(30):  # alternate row/column infinity-norm scaling
        s = dr[:, None] * a * dc[None, :]
        dr /= np.sqrt(np.abs(s).max(axis=1))
        s = dr[:, None] * a * dc[None, :]
        dc /= np.sqrt(np.abs(s).max(axis=0))
    s = dr[:, None] * a * dc[None, :]
    lu = lu_factor(s)
    y = lu_solve(lu, dr[:, None] * b)
    x = dc[:, None] * y
    for _ in range(5):
        res = b - a @ x
        x = x + dc[:, None] * lu_solve(lu, dr[:, None] * res)
    return x


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    wp = np.load(ws / "data" / "waypoints.npy")
    durs = np.load(ws / "data" / "segment_times.npy")
    tq = np.load(ws / "data" / "query_times.npy")
    bc = json.loads((ws / "data" / "boundary_conditions.json").read_text())
    bc0 = np.array([bc["start"][k] for k in ("velocity", "acceleration", "jerk")], dtype=float)
    bc1 = np.array([bc["end"][k] for k in ("velocity", "acceleration", "jerk")], dtype=float)
    m = len(durs)

    a, b = build_system(wp, durs, bc0, bc1)
    x = equilibrated_solve(a, b)  # (8M, 3)
    coeffs = x.reshape(m, 8, 3).transpose(0, 2, 1).copy()  # (M, axis, power)
    np.save(ws / "coefficients.npy", coeffs)

    knots = np.concatenate([[0.0], np.cumsum(durs)])
    seg = np.clip(np.searchsorted(knots, tq, side="right") - 1, 0, m - 1)
    tau = (tq - knots[seg]) / durs[seg]
    outs = []
    for r in range(3):
        rows = np.array([drow(t, r) for t in tau])  # (nq, 8)
        vals = np.einsum("qj,qdj->qd", rows, coeffs[seg]) / durs[seg][:, None] ** r
        outs.append(vals)
    np.save(ws / "positions.npy", outs[0])
    np.save(ws / "velocities.npy", outs[1])
    np.save(ws / "accelerations.npy", outs[2])

    # snap cost: exact Gauss-Legendre integral of (p''''(tau))^2 (degree 6 squared = 12)
    xg, wg = np.polynomial.legendre.leggauss(10)
    tg = 0.5 * (xg + 1.0)
    d4 = np.array([drow(t, 4) for t in tg])  # (10, 8)
    cost = np.zeros(3)
    for i in range(m):
        snap_tau = d4 @ coeffs[i].T  # (10, 3)
        cost += 0.5 * (wg[:, None] * snap_tau**2).sum(axis=0) * durs[i] ** -7.0
    np.save(ws / "snap_cost.npy", cost)


if __name__ == "__main__":
    main()
