"""Reference solver for the tilted double well (agent-style, independent of the generator).

Second-order finite differences on two nested uniform grids, each diagonalised with
a symmetric tridiagonal eigensolver, combined by Richardson extrapolation
(error O(h^2) -> O(h^4)) for energies, densities and <x>.

Usage: python solve.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.linalg import eigh_tridiagonal


def fd_states(cfg: dict, n_x: int, refine: int, n_levels: int):
    """Energies, densities on the output grid and <x> from an FD grid refine*(n_x-1) intervals wide."""
    wall = cfg["wall_L"]
    n_int = refine * (n_x - 1)
    x = np.linspace(-wall, wall, n_int + 1)
    h = x[1] - x[0]
    xi = x[1:-1]
    v = cfg["v0"] * ((xi / cfg["a"]) ** 2 - 1.0) ** 2 + cfg["tilt_f"] * xi
    diag = 2.0 / h**2 + v
    off = np.full(len(xi) - 1, -1.0 / h**2)
    evals, evecs = eigh_tridiagonal(diag, off, select="i", select_range=(0, n_levels - 1))
    psi = np.zeros((n_levels, n_int + 1))
    psi[:, 1:-1] = evecs.T
    rho = psi**2 / (np.sum(psi**2, axis=1, keepdims=True) * h)
    x_mean = np.sum(rho * x, axis=1) * h
    return evals, rho[:, ::refine], x_mean


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    cfg = json.loads((ws / "data" / "potential.json").read_text())
    x_grid = np.load(ws / "data" / "x_grid.npy")
    n_levels = int(cfg["n_levels"])
    n_x = len(x_grid)
    refine = max(1, int(np.ceil(12000 / (n_x - 1))))
    e1, r1, m1 = fd_states(cfg, n_x, refine, n_levels)
    e2, r2, m2 = fd_states(cfg, n_x, 2 * refine, n_levels)
    np.save(ws / "energies.npy", ((4 * e2 - e1) / 3).astype(np.float64))
    np.save(ws / "densities.npy", ((4 * r2 - r1) / 3).astype(np.float64))
    np.save(ws / "x_expectation.npy", ((4 * m2 - m1) / 3).astype(np.float64))


if __name__ == "__main__":
    main()
