"""Reference agent solution: adaptive DOP853 integration with dense-output minimum search.

Usage: python solution/solve.py --workspace W   (reads W/data, writes the outputs into W)
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq


def derivatives(_t: float, state: np.ndarray, mass: np.ndarray, g: float) -> np.ndarray:
    n = mass.size
    r = state[: 3 * n].reshape(n, 3)
    acc = np.zeros((n, 3))
    for i, j in itertools.combinations(range(n), 2):
        d = r[j] - r[i]
        inv3 = g / np.dot(d, d) ** 1.5
        acc[i] += mass[j] * inv3 * d
        acc[j] -= mass[i] * inv3 * d
    return np.concatenate([state[3 * n:], acc.ravel()])


def energy(mass: np.ndarray, r: np.ndarray, v: np.ndarray, g: float) -> float:
    e = 0.5 * float(np.sum(mass[:, None] * v * v))
    for i, j in itertools.combinations(range(mass.size), 2):
        e -= g * mass[i] * mass[j] / float(np.linalg.norm(r[j] - r[i]))
    return e


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ws = ap.parse_args().workspace
    ic = json.loads((ws / "data" / "initial_conditions.json").read_text(encoding="utf-8"))
    g = float(ic["G"])
    mass = np.asarray(ic["masses"], dtype=float)
    r0 = np.asarray(ic["positions"], dtype=float)
    v0 = np.asarray(ic["velocities"], dtype=float)
    t0, t1 = float(ic.get("t_start", 0.0)), float(ic["t_end"])
    n = mass.size
    y0 = np.concatenate([r0.ravel(), v0.ravel()])

    sol = solve_ivp(derivatives, (t0, t1), y0, method="DOP853", rtol=1e-12, atol=1e-14,
                    dense_output=True, args=(mass, g))
    if not sol.success:
        raise SystemExit(f"integration failed: {sol.message}")

    def rel(y: np.ndarray, i: int, j: int) -> tuple[np.ndarray, np.ndarray]:
        pos, vel = y[: 3 * n].reshape(n, 3), y[3 * n:].reshape(n, 3)
        return pos[j] - pos[i], vel[j] - vel[i]

    # radial velocity of every pair at every accepted step; minima are - -> + crossings
    pairs = list(itertools.combinations(range(n), 2))
    min_sep = np.empty(len(pairs))
    min_time = np.empty(len(pairs))
    for k, (i, j) in enumerate(pairs):
        dx = sol.y[3 * j:3 * j + 3] - sol.y[3 * i:3 * i + 3]
        dv = sol.y[3 * n + 3 * j:3 * n + 3 * j + 3] - sol.y[3 * n + 3 * i:3 * n + 3 * i + 3]
        radial = np.einsum("ij,ij->j", dx, dv)
        dist = np.linalg.norm(dx, axis=0)
        best_t, best_r = (t0, dist[0]) if dist[0] <= dist[-1] else (t1, dist[-1])

        def rv(t: float, i: int = i, j: int = j) -> float:
            a, b = rel(sol.sol(t), i, j)
            return float(a @ b)

        for s in np.nonzero((radial[:-1] < 0.0) & (radial[1:] >= 0.0))[0]:
            tm = brentq(rv, sol.t[s], sol.t[s + 1], xtol=1e-15, rtol=1e-15, maxiter=200)
            rm = float(np.linalg.norm(rel(sol.sol(tm), i, j)[0]))
            if rm < best_r:
                best_t, best_r = tm, rm
        min_sep[k], min_time[k] = best_r, best_t

    yf = sol.y[:, -1]
    rf, vf = yf[: 3 * n].reshape(n, 3), yf[3 * n:].reshape(n, 3)
    e = np.array([energy(mass, r0, v0, g), energy(mass, rf, vf, g)])
    np.save(ws / "min_separation.npy", min_sep)
    np.save(ws / "min_time.npy", min_time)
    np.save(ws / "final_state.npy", np.hstack([rf, vf]))
    np.save(ws / "energy.npy", e)


if __name__ == "__main__":
    main()
