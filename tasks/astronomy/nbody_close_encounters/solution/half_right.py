"""Half-right baseline: accurate adaptive integration, but minima read off a coarse grid.

The final state and energy are right; the pair minima are sampled on 400 uniform output
times, so the short pericentre passages are missed. Usage: python solution/half_right.py --workspace W
"""

from __future__ import annotations

import argparse
import itertools
import json
from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ws = ap.parse_args().workspace
    ic = json.loads((ws / "data" / "initial_conditions.json").read_text(encoding="utf-8"))
    m = np.asarray(ic["masses"], dtype=float)
    r0 = np.asarray(ic["positions"], dtype=float)
    v0 = np.asarray(ic["velocities"], dtype=float)
    t_end = float(ic["t_end"])
    n = m.size

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        r = y[: 3 * n].reshape(n, 3)
        d = r[None, :, :] - r[:, None, :]
        dist3 = np.linalg.norm(d, axis=2) ** 3 + np.eye(n)
        a = np.sum(m[None, :, None] * d / dist3[:, :, None], axis=1)
        return np.concatenate([y[3 * n:], a.ravel()])

    grid = np.linspace(0.0, t_end, 401)
    sol = solve_ivp(rhs, (0.0, t_end), np.concatenate([r0.ravel(), v0.ravel()]),
                    method="DOP853", rtol=1e-11, atol=1e-13, t_eval=grid)
    pos = sol.y[: 3 * n].reshape(n, 3, -1)
    pairs = list(itertools.combinations(range(n), 2))
    sep = np.array([np.linalg.norm(pos[j] - pos[i], axis=0) for i, j in pairs])
    k = np.argmin(sep, axis=1)
    rf, vf = sol.y[: 3 * n, -1].reshape(n, 3), sol.y[3 * n:, -1].reshape(n, 3)

    def energy(r: np.ndarray, v: np.ndarray) -> float:
        pot = sum(m[i] * m[j] / np.linalg.norm(r[j] - r[i]) for i, j in pairs)
        return 0.5 * float(np.sum(m[:, None] * v * v)) - float(pot)

    np.save(ws / "min_separation.npy", sep[np.arange(len(pairs)), k])
    np.save(ws / "min_time.npy", grid[k])
    np.save(ws / "final_state.npy", np.hstack([rf, vf]))
    np.save(ws / "energy.npy", np.array([energy(r0, v0), energy(rf, vf)]))


if __name__ == "__main__":
    main()
