"""Instance generator for physics.double_well_tunnelling.

Stationary states of a particle in a tilted quartic double well between hard walls,
H = -d^2/dx^2 + V(x), V(x) = v0 ((x/a)^2 - 1)^2 + f x, psi(-L) = psi(L) = 0
(units with hbar^2/(2m) = 1).  The reference is a Chebyshev spectral collocation
solution (N + 1 Gauss-Lobatto points, exponential convergence for this entire
potential), interpolated barycentrically onto the output grid and normalised with
Gauss-Legendre quadrature, so energies, densities and <x> are exact to ~1e-10.

CLI: python generate_gt.py --output-dir DIR --params JSON
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

TASK_DIR = Path(__file__).resolve().parent

INPUT_SPEC = [
    {"name": "potential.json", "type": "json", "description": "v0, a, tilt f, wall position L, number of levels"},
    {"name": "x_grid.npy", "type": "data", "description": "output grid on [-L, L]"},
]
OUTPUT_SPEC = [
    {"name": "energies.npy", "type": "data"},
    {"name": "densities.npy", "type": "data"},
    {"name": "x_expectation.npy", "type": "data"},
]
DEFAULT_PARAMS = {
    "v0": 8.0,
    "a": 1.3,
    "tilt": 0.3,
    "n_levels": 6,
    "n_x": 401,
    "seed": 0,
}
N_CHEB = 240  # collocation degree; energies agree with N = 360 to ~1e-13 relative
N_GAUSS = 800  # quadrature nodes for normalisation and <x>


def _merge(params: dict | None) -> dict:
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    for key in ("v0", "a", "tilt"):
        p[key] = float(p[key])
    for key in ("n_levels", "n_x", "seed"):
        p[key] = int(p[key])
    if p["v0"] <= 0 or p["a"] <= 0 or p["n_levels"] < 1 or p["n_x"] < 3:
        raise ValueError("need v0 > 0, a > 0, n_levels >= 1, n_x >= 3")
    return p


def potential(x: np.ndarray, v0: float, a: float, f: float) -> np.ndarray:
    return v0 * ((x / a) ** 2 - 1.0) ** 2 + f * x


def chebyshev_states(v0: float, a: float, f: float, wall: float, n_levels: int, n: int = N_CHEB):
    """Lowest eigenpairs by Chebyshev collocation (Trefethen, Spectral Methods in MATLAB, ch. 6-9)."""
    k = np.arange(n + 1)
    t = np.cos(np.pi * k / n)  # Gauss-Lobatto points on [-1, 1], descending
    c = np.where((k == 0) | (k == n), 2.0, 1.0) * (-1.0) ** k
    dt = t[:, None] - t[None, :]
    d = np.outer(c, 1.0 / c) / (dt + np.eye(n + 1))
    d -= np.diag(d.sum(axis=1))
    d2 = (d @ d)[1:-1, 1:-1] / wall**2  # Dirichlet rows/columns removed, x = L t
    x_in = wall * t[1:-1]
    h = -d2 + np.diag(potential(x_in, v0, a, f))
    evals, evecs = np.linalg.eig(h)
    order = np.argsort(evals.real)[:n_levels]
    energies = evals.real[order]
    states = np.zeros((n_levels, n + 1))
    states[:, 1:-1] = evecs[:, order].real.T
    return energies, wall * t, states


def chebyshev_interpolate(nodes: np.ndarray, values: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Barycentric interpolation at Gauss-Lobatto points with their closed-form weights.

    (Written out rather than scipy's BarycentricInterpolator, whose weight computation
    draws random numbers and so is not byte-reproducible.)
    """
    n = len(nodes) - 1
    w = (-1.0) ** np.arange(n + 1)
    w[[0, -1]] *= 0.5
    diff = x[:, None] - nodes[None, :]
    exact = diff == 0.0
    diff[exact] = 1.0
    kernel = w[None, :] / diff
    out = (kernel @ values.T) / kernel.sum(axis=1)[:, None]
    rows, cols = np.nonzero(exact)
    out[rows] = values.T[cols]
    return out.T


def generate(output_dir: Path, params: dict) -> dict:
    p = _merge(params)
    rng = np.random.default_rng(p["seed"])
    output_dir = Path(output_dir)
    data_dir = output_dir / "data"
    ref_dir = output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)

    v0, a = p["v0"], p["a"]
    # the tilt's sign and the wall distance are drawn from the seed
    f = p["tilt"] * (1.0 if rng.random() < 0.5 else -1.0)
    wall = float(np.round(a * rng.uniform(2.2, 2.8), 4))
    x_grid = np.linspace(-wall, wall, p["n_x"])

    energies, nodes, states = chebyshev_states(v0, a, f, wall, p["n_levels"])
    xg, wg = np.polynomial.legendre.leggauss(N_GAUSS)
    xg, wg = wall * xg, wall * wg
    on_gauss = chebyshev_interpolate(nodes, states, xg) ** 2
    norms = on_gauss @ wg
    densities = chebyshev_interpolate(nodes, states, x_grid) ** 2 / norms[:, None]
    x_expect = (on_gauss @ (wg * xg)) / norms
    densities[:, [0, -1]] = 0.0

    config = {
        "v0": v0,
        "a": a,
        "tilt_f": f,
        "wall_L": wall,
        "n_levels": p["n_levels"],
        "hamiltonian": "H = -d^2/dx^2 + V(x), V(x) = v0*((x/a)^2 - 1)^2 + tilt_f*x, psi(-L) = psi(L) = 0",
    }
    (data_dir / "potential.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    np.save(data_dir / "x_grid.npy", x_grid.astype(np.float64))
    np.save(ref_dir / "energies_ref.npy", energies.astype(np.float64))
    np.save(ref_dir / "densities_ref.npy", densities.astype(np.float64))
    np.save(ref_dir / "x_expectation_ref.npy", x_expect.astype(np.float64))

    values = {
        "v0": f"{v0:g}",
        "a": f"{a:g}",
        "f": f"{f:g}",
        "L": f"{wall:g}",
        "n_levels": p["n_levels"],
        "n_x": p["n_x"],
    }
    for level in ("b1", "b2", "b3", "b4"):
        template = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(_render(template, values), encoding="utf-8")

    meta = {
        "params_used": p,
        "input_files": [s["name"] for s in INPUT_SPEC],
        "reference_files": ["energies_ref.npy", "densities_ref.npy", "x_expectation_ref.npy"],
    }
    (output_dir / "instance_meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def _render(text: str, values: dict) -> str:
    def repl(match: re.Match) -> str:
        key = match.group(1)
        if key not in values:
            raise KeyError(f"unknown prompt placeholder {key!r}")
        return str(values[key])

    return re.sub(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", repl, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output-dir", required=True, type=Path)
    parser.add_argument("--params", default="{}")
    args = parser.parse_args()
    generate(args.output_dir, json.loads(args.params))


if __name__ == "__main__":
    main()
