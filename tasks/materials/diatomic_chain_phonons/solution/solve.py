"""Reference solver for the 1D diatomic chain task (agent-style, independent of the generator).

Dispersion from numerical diagonalisation of the 2x2 dynamical matrix, DOS by
histogramming a very fine uniform k-mesh, heat capacity by adaptive quadrature
over the Brillouin zone.

Usage: python solve.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.integrate import quad

AMU = 1.66053906660e-27
HBAR = 1.054571817e-34
KB = 1.380649e-23


def dynamical_eigs(k_si: np.ndarray, m1: float, m2: float, c1: float, c2: float, a: float) -> np.ndarray:
    """Sorted eigenvalues w^2 of the Hermitian dynamical matrix for each k (SI)."""
    n = len(k_si)
    d = np.zeros((n, 2, 2), dtype=complex)
    d[:, 0, 0] = (c1 + c2) / m1
    d[:, 1, 1] = (c1 + c2) / m2
    off = -(c1 + c2 * np.exp(-1j * k_si * a)) / np.sqrt(m1 * m2)
    d[:, 0, 1] = off
    d[:, 1, 0] = np.conj(off)
    return np.linalg.eigvalsh(d)


def branches_closed_form(u: np.ndarray, m1: float, m2: float, c1: float, c2: float) -> np.ndarray:
    """Closed-form (acoustic, optical) angular frequencies at reduced wavevector u = k a."""
    big_a = 0.5 * (c1 + c2) * (1 / m1 + 1 / m2)
    big_b = 4 * c1 * c2 / (m1 * m2)
    s2 = np.sin(u / 2) ** 2
    r = np.sqrt(np.maximum(big_a**2 - big_b * s2, 0.0))
    return np.stack([np.sqrt(big_b * s2 / (big_a + r)), np.sqrt(big_a + r)])


def einstein(x: float) -> float:
    if x < 1e-10:
        return 1.0
    if x > 1400:
        return 0.0
    h = 0.5 * x
    return (h / np.sinh(h)) ** 2


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    chain = json.loads((ws / "data" / "chain.json").read_text())
    m1 = chain["m1_amu"] * AMU
    m2 = chain["m2_amu"] * AMU
    c1, c2 = chain["C1_N_per_m"], chain["C2_N_per_m"]
    a = chain["lattice_constant_angstrom"] * 1e-10
    k = np.load(ws / "data" / "k_points.npy") * 1e10
    edges = np.load(ws / "data" / "dos_bin_edges.npy")
    temps = np.load(ws / "data" / "temperatures.npy")
    to_thz = 1 / (2 * np.pi * 1e12)

    # 1) dispersion: diagonalise D(k); clip tiny negative round-off at Gamma
    w2 = dynamical_eigs(k, m1, m2, c1, c2, a)
    # near Gamma the acoustic eigenvalue suffers cancellation; use the closed form there
    w_cf = branches_closed_form(k * a, m1, m2, c1, c2).T
    disp = np.sqrt(np.clip(w2, 0, None))
    small = np.abs(k * a) < 1e-2
    disp[small, 0] = w_cf[small, 0]
    np.save(ws / "dispersion.npy", (disp * to_thz).astype(np.float64))

    # 2) DOS: histogram of both branches on a 4e6-point midpoint mesh of [0, pi/a]
    n_mesh = 4_000_000
    u = (np.arange(n_mesh) + 0.5) * (np.pi / n_mesh)
    f = branches_closed_form(u, m1, m2, c1, c2) * to_thz
    counts = np.histogram(f[0], edges)[0] + np.histogram(f[1], edges)[0]
    dos = counts / n_mesh / np.diff(edges)
    np.save(ws / "dos.npy", dos.astype(np.float64))

    # 3) heat capacity: adaptive quadrature in u = k a over [0, pi] for each branch
    def integrand(uu: float, b: int, t: float) -> float:
        w = branches_closed_form(np.array([uu]), m1, m2, c1, c2)[b, 0]
        return einstein(HBAR * w / (KB * t))

    cv = np.empty(len(temps))
    for i, t in enumerate(temps):
        tot = 0.0
        for b in (0, 1):
            val, _ = quad(
                integrand,
                0.0,
                np.pi,
                args=(b, t),
                limit=400,
                epsabs=1e-14,
                epsrel=1e-12,
                points=[1e-5, 1e-4, 1e-3, 1e-2, 1e-1],
            )
            tot += val
        cv[i] = tot / np.pi
    np.save(ws / "heat_capacity.npy", cv.astype(np.float64))

    # 4) summary
    edge = branches_closed_form(np.array([np.pi, 0.0]), m1, m2, c1, c2)
    ac_max, op_min, op_max = edge[0, 0] * to_thz, edge[1, 0] * to_thz, edge[1, 1] * to_thz
    dk = 1e-6
    v_s = branches_closed_form(np.array([dk]), m1, m2, c1, c2)[0, 0] / (dk / a)
    summary = np.array([ac_max, op_min, op_max, op_min - ac_max, v_s], dtype=np.float64)
    np.save(ws / "summary.npy", summary)


if __name__ == "__main__":
    main()
