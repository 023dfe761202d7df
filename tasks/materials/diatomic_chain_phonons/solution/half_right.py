"""Half-right baseline: correct dispersion and band summary, but a classical
(Dulong-Petit) heat capacity and a DOS histogrammed from a coarse 64-point k-mesh.

Usage: python half_right.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

AMU = 1.66053906660e-27


def branches(u: np.ndarray, m1: float, m2: float, c1: float, c2: float) -> np.ndarray:
    big_a = 0.5 * (c1 + c2) * (1 / m1 + 1 / m2)
    big_b = 4 * c1 * c2 / (m1 * m2)
    s2 = np.sin(u / 2) ** 2
    r = np.sqrt(np.maximum(big_a**2 - big_b * s2, 0.0))
    return np.stack([np.sqrt(big_b * s2 / (big_a + r)), np.sqrt(big_a + r)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    chain = json.loads((ws / "data" / "chain.json").read_text())
    m1, m2 = chain["m1_amu"] * AMU, chain["m2_amu"] * AMU
    c1, c2 = chain["C1_N_per_m"], chain["C2_N_per_m"]
    a = chain["lattice_constant_angstrom"] * 1e-10
    k = np.load(ws / "data" / "k_points.npy") * 1e10
    edges = np.load(ws / "data" / "dos_bin_edges.npy")
    temps = np.load(ws / "data" / "temperatures.npy")
    to_thz = 1 / (2 * np.pi * 1e12)

    np.save(ws / "dispersion.npy", (branches(k * a, m1, m2, c1, c2).T * to_thz).astype(np.float64))

    u = (np.arange(64) + 0.5) * (np.pi / 64)
    f = branches(u, m1, m2, c1, c2) * to_thz
    counts = np.histogram(f[0], edges)[0] + np.histogram(f[1], edges)[0]
    np.save(ws / "dos.npy", (counts / 64 / np.diff(edges)).astype(np.float64))

    # classical equipartition: k_B per atom, two atoms per cell, at every temperature
    np.save(ws / "heat_capacity.npy", np.full(len(temps), 2.0))

    edge = branches(np.array([np.pi, 0.0]), m1, m2, c1, c2) * to_thz
    v_s = a * np.sqrt(c1 * c2 / ((c1 + c2) * (chain["m1_amu"] + chain["m2_amu"]) * AMU))
    summary = np.array([edge[0, 0], edge[1, 0], edge[1, 1], edge[1, 0] - edge[0, 0], v_s])
    np.save(ws / "summary.npy", summary.astype(np.float64))


if __name__ == "__main__":
    main()
