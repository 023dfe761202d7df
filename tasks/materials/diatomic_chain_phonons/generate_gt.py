"""Instance generator for materials.diatomic_chain_phonons.

Harmonic lattice dynamics of a one-dimensional diatomic chain (two masses per
primitive cell, two alternating nearest-neighbour springs).  Every reference
quantity is obtained from closed-form expressions (dispersion, integrated
density of states) or from a graded composite Gauss-Legendre quadrature over
the Brillouin zone (heat capacity), so the references are exact to ~1e-12.

CLI: python generate_gt.py --output-dir DIR --params JSON
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

# CODATA 2018 constants (SI)
AMU = 1.66053906660e-27  # kg
HBAR = 1.054571817e-34  # J s
KB = 1.380649e-23  # J / K

INPUT_SPEC = [
    {"name": "chain.json", "type": "json", "description": "masses, spring constants, lattice constant"},
    {"name": "k_points.npy", "type": "data", "description": "wavevectors (1/angstrom)"},
    {"name": "dos_bin_edges.npy", "type": "data", "description": "frequency bin edges (THz)"},
    {"name": "temperatures.npy", "type": "data", "description": "temperatures (K)"},
]
OUTPUT_SPEC = [
    {"name": "dispersion.npy", "type": "data"},
    {"name": "dos.npy", "type": "data"},
    {"name": "heat_capacity.npy", "type": "data"},
    {"name": "summary.npy", "type": "data"},
]
DEFAULT_PARAMS = {
    "m1_amu": 12.0,
    "mass_ratio": 2.5,
    "spring_c1": 60.0,
    "spring_ratio": 0.6,
    "lattice_a": 3.5,
    "n_k": 201,
    "n_bins": 80,
    "n_T": 40,
    "seed": 0,
}

TASK_DIR = Path(__file__).resolve().parent


def _chain_constants(m1: float, m2: float, c1: float, c2: float) -> tuple[float, float]:
    """A and B of omega^2 = A -/+ sqrt(A^2 - B sin^2(ka/2)) in SI units (rad^2/s^2)."""
    a_coef = 0.5 * (c1 + c2) * (1.0 / m1 + 1.0 / m2)
    b_coef = 4.0 * c1 * c2 / (m1 * m2)
    return a_coef, b_coef


def _omega2(u: np.ndarray, a_coef: float, b_coef: float) -> tuple[np.ndarray, np.ndarray]:
    """Acoustic and optical omega^2 at reduced wavevector u = k a."""
    s2 = np.sin(0.5 * u) ** 2
    root = np.sqrt(np.maximum(a_coef * a_coef - b_coef * s2, 0.0))
    # acoustic written in a cancellation-free form: (A - root) = B s2 / (A + root)
    ac = b_coef * s2 / (a_coef + root)
    op = a_coef + root
    return ac, op


def _cumulative_modes(freq_thz: np.ndarray, a_coef: float, b_coef: float) -> np.ndarray:
    """Exact integrated DOS N(f): modes per primitive cell with frequency below f."""
    w2 = (2.0 * np.pi * 1e12 * np.asarray(freq_thz, dtype=float)) ** 2
    ac_max2 = b_coef / (a_coef + np.sqrt(a_coef * a_coef - b_coef))
    op_min2 = a_coef + np.sqrt(a_coef * a_coef - b_coef)
    op_max2 = 2.0 * a_coef
    s2 = np.clip(w2 * (2.0 * a_coef - w2) / b_coef, 0.0, 1.0)
    frac = (2.0 / np.pi) * np.arcsin(np.sqrt(s2))
    n_ac = np.where(w2 >= ac_max2, 1.0, frac)
    n_op = np.where(w2 <= op_min2, 0.0, np.where(w2 >= op_max2, 1.0, 1.0 - frac))
    return n_ac + n_op


def _heat_capacity(temps: np.ndarray, a_coef: float, b_coef: float) -> np.ndarray:
    """C_V per primitive cell in units of k_B, (1/pi) int_0^pi sum_b E(x_b(u)) du.

    Composite Gauss-Legendre on geometrically graded panels towards u = 0, where
    the acoustic branch is soft and the low-temperature integrand is concentrated.
    """
    breaks = np.concatenate([[0.0], np.pi * np.logspace(-9, 0, 46)])
    xg, wg = np.polynomial.legendre.leggauss(24)
    lo, hi = breaks[:-1], breaks[1:]
    u = (0.5 * (hi - lo)[:, None] * (xg[None, :] + 1.0) + lo[:, None]).ravel()
    w = (0.5 * (hi - lo)[:, None] * wg[None, :]).ravel()
    ac, op = _omega2(u, a_coef, b_coef)
    omegas = np.stack([np.sqrt(ac), np.sqrt(op)])  # (2, n_u)
    out = np.empty(len(temps))
    for i, t in enumerate(temps):
        x = HBAR * omegas / (KB * t)
        half = 0.5 * x
        with np.errstate(over="ignore", invalid="ignore"):
            e = np.where(half > 1e-12, (half / np.sinh(np.minimum(half, 700.0))) ** 2, 1.0)
        e = np.where(half > 700.0, 0.0, e)
        out[i] = float(np.sum(e * w[None, :])) / np.pi
    return out


def _render(text: str, values: dict) -> str:
    def repl(match: re.Match) -> str:
        key = match.group(1)
        if key not in values:
            raise KeyError(f"unknown prompt placeholder {key!r}")
        return str(values[key])

    return re.sub(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", repl, text)


def _merge(params: dict | None) -> dict:
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    p["m1_amu"] = float(p["m1_amu"])
    p["mass_ratio"] = float(p["mass_ratio"])
    p["spring_c1"] = float(p["spring_c1"])
    p["spring_ratio"] = float(p["spring_ratio"])
    p["lattice_a"] = float(p["lattice_a"])
    for key in ("n_k", "n_bins", "n_T", "seed"):
        p[key] = int(p[key])
    if not (1.0 < p["mass_ratio"] or p["spring_ratio"] < 1.0):
        raise ValueError("need m1 != m2 or C1 != C2 for a gapped diatomic chain")
    return p


def generate(output_dir: Path, params: dict) -> dict:
    p = _merge(params)
    rng = np.random.default_rng(p["seed"])
    output_dir = Path(output_dir)
    data_dir = output_dir / "data"
    ref_dir = output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)

    # The heavier atom is atom 1 or atom 2 at random; the stiffer spring likewise.
    m_light = p["m1_amu"]
    m_heavy = p["m1_amu"] * p["mass_ratio"]
    c_a = p["spring_c1"]
    c_b = p["spring_c1"] * p["spring_ratio"]
    m1, m2 = (m_light, m_heavy) if rng.random() < 0.5 else (m_heavy, m_light)
    c1, c2 = (c_a, c_b) if rng.random() < 0.5 else (c_b, c_a)
    a_ang = p["lattice_a"]

    m1_si, m2_si = m1 * AMU, m2 * AMU
    a_coef, b_coef = _chain_constants(m1_si, m2_si, c1, c2)
    to_thz = 1.0 / (2.0 * np.pi * 1e12)

    # k points: random points inside the first Brillouin zone plus Gamma and both zone edges
    kmax = np.pi / a_ang
    n_rand = p["n_k"] - 3
    k_pts = np.sort(np.concatenate([rng.uniform(-kmax, kmax, n_rand), [-kmax, 0.0, kmax]]))
    u = k_pts * a_ang
    ac2, op2 = _omega2(u, a_coef, b_coef)
    dispersion = np.stack([np.sqrt(ac2), np.sqrt(op2)], axis=1) * to_thz

    ac_max = np.sqrt(b_coef / (a_coef + np.sqrt(a_coef**2 - b_coef))) * to_thz
    op_min = np.sqrt(a_coef + np.sqrt(a_coef**2 - b_coef)) * to_thz
    op_max = np.sqrt(2.0 * a_coef) * to_thz
    v_sound = a_ang * 1e-10 * np.sqrt(c1 * c2 / ((c1 + c2) * (m1_si + m2_si)))
    summary = np.array([ac_max, op_min, op_max, op_min - ac_max, v_sound], dtype=np.float64)

    f_top = float(np.ceil(1.05 * op_max * 100.0) / 100.0)
    edges = np.linspace(0.0, f_top, p["n_bins"] + 1)
    dos = np.diff(_cumulative_modes(edges, a_coef, b_coef)) / np.diff(edges)

    t_min = float(np.round(rng.uniform(1.0, 5.0), 3))
    t_max = float(np.round(rng.uniform(800.0, 3000.0), 1))
    temps = np.geomspace(t_min, t_max, p["n_T"])
    cv = _heat_capacity(temps, a_coef, b_coef)

    chain = {
        "m1_amu": m1,
        "m2_amu": m2,
        "C1_N_per_m": c1,
        "C2_N_per_m": c2,
        "lattice_constant_angstrom": a_ang,
        "description": (
            "Unit cell [0, a): atom 1 (mass m1) and atom 2 (mass m2). Spring C1 joins atom 1 "
            "to atom 2 inside the same cell; spring C2 joins atom 2 to atom 1 of the next cell."
        ),
    }
    (data_dir / "chain.json").write_text(json.dumps(chain, indent=2, sort_keys=True) + "\n")
    np.save(data_dir / "k_points.npy", k_pts.astype(np.float64))
    np.save(data_dir / "dos_bin_edges.npy", edges.astype(np.float64))
    np.save(data_dir / "temperatures.npy", temps.astype(np.float64))

    np.save(ref_dir / "dispersion_ref.npy", dispersion.astype(np.float64))
    np.save(ref_dir / "dos_ref.npy", dos.astype(np.float64))
    np.save(ref_dir / "heat_capacity_ref.npy", cv.astype(np.float64))
    np.save(ref_dir / "summary_ref.npy", summary)

    values = {
        "n_k": p["n_k"],
        "n_bins": p["n_bins"],
        "n_T": p["n_T"],
        "m1": f"{m1:.4f}",
        "m2": f"{m2:.4f}",
        "c1": f"{c1:.4f}",
        "c2": f"{c2:.4f}",
        "a": f"{a_ang:.4f}",
        "t_min": f"{temps[0]:g}",
        "t_max": f"{temps[-1]:g}",
        "f_top": f"{f_top:g}",
    }
    for level in ("b1", "b2", "b3", "b4"):
        template = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(_render(template, values), encoding="utf-8")

    meta = {
        "params_used": p,
        "input_files": [f"data/{s['name']}" for s in INPUT_SPEC],
        "reference_files": [
            "dispersion_ref.npy",
            "dos_ref.npy",
            "heat_capacity_ref.npy",
            "summary_ref.npy",
        ],
    }
    (output_dir / "instance_meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output-dir", required=True, type=Path)
    parser.add_argument("--params", default="{}")
    args = parser.parse_args()
    generate(args.output_dir, json.loads(args.params))


if __name__ == "__main__":
    main()
