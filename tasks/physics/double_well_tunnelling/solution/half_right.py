"""Half-right baseline: the right finite-difference method, but solved only on the
coarse output grid itself (no refinement, no extrapolation), so nothing is converged.

Usage: python half_right.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.linalg import eigh_tridiagonal


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    cfg = json.loads((ws / "data" / "potential.json").read_text())
    x = np.load(ws / "data" / "x_grid.npy")
    n = int(cfg["n_levels"])
    h = x[1] - x[0]
    xi = x[1:-1]
    v = cfg["v0"] * ((xi / cfg["a"]) ** 2 - 1.0) ** 2 + cfg["tilt_f"] * xi
    evals, evecs = eigh_tridiagonal(2.0 / h**2 + v, np.full(len(xi) - 1, -1.0 / h**2),
                                    select="i", select_range=(0, n - 1))
    psi = np.zeros((n, len(x)))
    psi[:, 1:-1] = evecs.T
    rho = psi**2 / (np.sum(psi**2, axis=1, keepdims=True) * h)
    np.save(ws / "energies.npy", evals.astype(np.float64))
    np.save(ws / "densities.npy", rho.astype(np.float64))
    np.save(ws / "x_expectation.npy", (np.sum(rho * x, axis=1) * h).astype(np.float64))


if __name__ == "__main__":
    main()
