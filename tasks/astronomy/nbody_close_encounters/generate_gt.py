"""Instance generator for astronomy.nbody_close_encounters.

The initial conditions are built *backwards*: at a chosen epoch ``t_c`` a bound pair is
placed on an instantaneous Keplerian ellipse and every extra body sits exactly at the
pericentre of a near-parabolic hyperbola around one member of the pair (separation
``pericentre``). The full N-body system is then integrated backwards from ``t_c`` to
``t = 0`` with a tight-tolerance DOP853 run; that state is the published initial
condition. This guarantees deep close encounters (relative speeds of tens of velocity
units at separations of 1e-3 to 2e-2) inside the interval, which a coarse fixed-step
integrator cannot resolve.

The reference is a forward DOP853 integration (rtol 1e-13) started from the *rounded
published* initial condition, with the exact local minima of every pair separation
located by event detection on d(r_ij^2)/dt = 2 r_ij . v_ij = 0 (dense output, root
polished by the solver's Brent iteration).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from scipy.integrate import solve_ivp

TASK_DIR = Path(__file__).resolve().parent

DEFAULT_PARAMS: dict[str, Any] = {
    "n_bodies": 4,
    "mass_ratio": 0.7,
    "intruder_mass": 0.25,
    "eccentricity": 0.5,
    "v_inf": 1.4,
    "pericentre": 0.008,
    "t_end": 8.0,
    "seed": 0,
}

INPUT_SPEC: list[dict[str, Any]] = [
    {"name": "initial_conditions.json", "type": "json",
     "description": "G, softening, t_end, masses, positions, velocities"},
]

OUTPUT_SPEC: list[dict[str, Any]] = [
    {"name": "min_separation.npy", "type": "data"},
    {"name": "min_time.npy", "type": "data"},
    {"name": "final_state.npy", "type": "data"},
    {"name": "energy.npy", "type": "data"},
]

REF_RTOL = 1e-13
REF_ATOL = 1e-15


def pair_list(n: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(n) for j in range(i + 1, n)]


def accelerations(pos: np.ndarray, masses: np.ndarray) -> np.ndarray:
    diff = pos[None, :, :] - pos[:, None, :]
    r2 = np.einsum("ijk,ijk->ij", diff, diff)
    np.fill_diagonal(r2, 1.0)
    inv_r3 = r2 ** -1.5
    np.fill_diagonal(inv_r3, 0.0)
    return np.einsum("ij,ijk->ik", inv_r3 * masses[None, :], diff)


def make_rhs(masses: np.ndarray):  # noqa: ANN201 - closure returned to scipy
    n = len(masses)

    def rhs(_t: float, y: np.ndarray) -> np.ndarray:
        pos = y[: 3 * n].reshape(n, 3)
        acc = accelerations(pos, masses)
        return np.concatenate([y[3 * n:], acc.ravel()])

    return rhs


def total_energy(masses: np.ndarray, pos: np.ndarray, vel: np.ndarray) -> float:
    kinetic = 0.5 * float(np.sum(masses * np.sum(vel * vel, axis=1)))
    potential = 0.0
    for i, j in pair_list(len(masses)):
        potential -= masses[i] * masses[j] / float(np.linalg.norm(pos[j] - pos[i]))
    return kinetic + potential


def _kepler_relative_state(mu: float, a: float, e: float, mean_anomaly: float
                           ) -> tuple[np.ndarray, np.ndarray]:
    ecc_anom = mean_anomaly
    for _ in range(60):
        ecc_anom -= (ecc_anom - e * np.sin(ecc_anom) - mean_anomaly) / (1.0 - e * np.cos(ecc_anom))
    n_mean = np.sqrt(mu / a**3)
    denom = 1.0 - e * np.cos(ecc_anom)
    rel = np.array([a * (np.cos(ecc_anom) - e), a * np.sqrt(1 - e * e) * np.sin(ecc_anom), 0.0])
    vrel = np.array([-a * n_mean * np.sin(ecc_anom) / denom,
                     a * n_mean * np.sqrt(1 - e * e) * np.cos(ecc_anom) / denom, 0.0])
    return rel, vrel


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def build_initial_conditions(p: dict[str, Any], rng: np.random.Generator
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = int(p["n_bodies"])
    n_intr = n - 2
    masses = np.empty(n)
    masses[0] = 1.0
    masses[1] = float(p["mass_ratio"])
    # intruder masses scatter by +-20 % around the nominal value
    masses[2:] = float(p["intruder_mass"]) * rng.uniform(0.8, 1.2, size=n_intr)
    masses = np.round(masses, 6)
    t_end = float(p["t_end"])
    t_c = t_end * rng.uniform(0.35, 0.5)
    # the two members of the bound pair carry their intruder (if any) with them: the
    # Keplerian ellipse is that of the two sub-system centres of mass
    sub_mass = masses[:2].copy()
    for k in range(n_intr):
        sub_mass[k % 2] += masses[2 + k]
    mu_b = sub_mass.sum()
    rel, vrel = _kepler_relative_state(mu_b, 1.0, float(p["eccentricity"]),
                                       rng.uniform(0.0, 2.0 * np.pi))
    rot = _random_rotation(rng)
    rel, vrel = rot @ rel, rot @ vrel
    pos = np.zeros((n, 3))
    vel = np.zeros((n, 3))
    pos[0], pos[1] = -sub_mass[1] / mu_b * rel, sub_mass[0] / mu_b * rel
    vel[0], vel[1] = -sub_mass[1] / mu_b * vrel, sub_mass[0] / mu_b * vrel
    for k in range(n_intr):
        target, body = k % 2, 2 + k
        q = float(p["pericentre"]) * (1.0 if k == 0 else rng.uniform(0.6, 1.6))
        n_hat = _unit(rng.normal(size=3))
        t_hat = rng.normal(size=3)
        t_hat = _unit(t_hat - t_hat.dot(n_hat) * n_hat)
        mu = masses[target] + masses[body]
        v_peri = np.sqrt(float(p["v_inf"]) ** 2 + 2.0 * mu / q)
        com_pos, com_vel = pos[target].copy(), vel[target].copy()
        f_t, f_b = masses[body] / mu, masses[target] / mu
        pos[target], pos[body] = com_pos - f_t * q * n_hat, com_pos + f_b * q * n_hat
        vel[target], vel[body] = com_vel - f_t * v_peri * t_hat, com_vel + f_b * v_peri * t_hat
    m_tot = masses.sum()
    pos -= (masses[:, None] * pos).sum(0) / m_tot
    vel -= (masses[:, None] * vel).sum(0) / m_tot
    y_c = np.concatenate([pos.ravel(), vel.ravel()])
    # the backward run only shapes the initial condition (which is then published
    # rounded), so it does not need the reference accuracy
    back = solve_ivp(make_rhs(masses), (t_c, 0.0), y_c, method="DOP853", rtol=1e-10, atol=1e-12)
    if not back.success:
        raise RuntimeError(f"backward integration failed: {back.message}")
    y0 = back.y[:, -1]
    # publish with 12 significant digits so the file is the exact problem definition
    pos0 = np.array([float(f"{v:.12g}") for v in y0[: 3 * n]]).reshape(n, 3)
    vel0 = np.array([float(f"{v:.12g}") for v in y0[3 * n:]]).reshape(n, 3)
    return masses, pos0, vel0


def reference_solution(masses: np.ndarray, pos0: np.ndarray, vel0: np.ndarray, t_end: float
                       ) -> dict[str, Any]:
    n = len(masses)
    pairs = pair_list(n)
    events = []
    for i, j in pairs:
        def approach(_t: float, y: np.ndarray, i: int = i, j: int = j) -> float:
            dx = y[3 * j:3 * j + 3] - y[3 * i:3 * i + 3]
            dv = y[3 * n + 3 * j:3 * n + 3 * j + 3] - y[3 * n + 3 * i:3 * n + 3 * i + 3]
            return float(dx @ dv)
        approach.direction = 1.0  # type: ignore[attr-defined]  # minima only
        events.append(approach)
    y0 = np.concatenate([pos0.ravel(), vel0.ravel()])
    sol = solve_ivp(make_rhs(masses), (0.0, t_end), y0, method="DOP853",
                    rtol=REF_RTOL, atol=REF_ATOL, events=events)
    if not sol.success:
        raise RuntimeError(f"reference integration failed: {sol.message}")
    y_end = sol.y[:, -1]

    def sep_speed(y: np.ndarray, i: int, j: int) -> tuple[float, float]:
        dx = y[3 * j:3 * j + 3] - y[3 * i:3 * i + 3]
        dv = y[3 * n + 3 * j:3 * n + 3 * j + 3] - y[3 * n + 3 * i:3 * n + 3 * i + 3]
        return float(np.linalg.norm(dx)), float(np.linalg.norm(dv))

    minima: list[dict[str, Any]] = []
    min_sep = np.empty(len(pairs))
    min_time = np.empty(len(pairs))
    for k, (i, j) in enumerate(pairs):
        cands = []
        for t, y in ((0.0, y0), (t_end, y_end)):
            r, v = sep_speed(y, i, j)
            cands.append({"t": t, "r": r, "v_rel": v, "kind": "endpoint"})
        for t, y in zip(sol.t_events[k], sol.y_events[k], strict=True):
            r, v = sep_speed(y, i, j)
            cands.append({"t": float(t), "r": r, "v_rel": v, "kind": "interior"})
        cands.sort(key=lambda c: c["r"])
        best = cands[0]
        min_sep[k], min_time[k] = best["r"], best["t"]
        minima.append({"pair": [i, j], "candidates": cands})
    final_state = np.concatenate([y_end[: 3 * n].reshape(n, 3), y_end[3 * n:].reshape(n, 3)], axis=1)
    energy = np.array([total_energy(masses, pos0, vel0),
                       total_energy(masses, final_state[:, :3], final_state[:, 3:])])
    return {"min_separation": min_sep, "min_time": min_time, "final_state": final_state,
            "energy": energy, "minima": minima, "nfev": int(sol.nfev)}


def render(template: str, values: dict[str, Any]) -> str:
    out = template
    for key, val in values.items():
        out = out.replace("{{ " + key + " }}", str(val)).replace("{{" + key + "}}", str(val))
    return out


def generate(output_dir: Path, params: dict[str, Any]) -> dict[str, Any]:
    output_dir = Path(output_dir)
    p = {**DEFAULT_PARAMS, **(params or {})}
    p["n_bodies"] = int(p["n_bodies"])
    rng = np.random.default_rng(int(p["seed"]))
    masses, pos0, vel0 = build_initial_conditions(p, rng)
    t_end = float(p["t_end"])
    ref = reference_solution(masses, pos0, vel0, t_end)

    data_dir = output_dir / "data"
    ref_dir = output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)
    ic = {
        "description": "Point-mass N-body initial conditions (G = 1 units). Bodies are "
                       "indexed 0..n_bodies-1; positions/velocities are Cartesian.",
        "G": 1.0,
        "softening": 0.0,
        "t_start": 0.0,
        "t_end": t_end,
        "n_bodies": int(p["n_bodies"]),
        "masses": [float(m) for m in masses],
        "positions": [[float(v) for v in row] for row in pos0],
        "velocities": [[float(v) for v in row] for row in vel0],
    }
    (data_dir / "initial_conditions.json").write_text(json.dumps(ic, indent=2) + "\n",
                                                      encoding="utf-8")
    np.save(ref_dir / "min_separation_ref.npy", ref["min_separation"])
    np.save(ref_dir / "min_time_ref.npy", ref["min_time"])
    np.save(ref_dir / "final_state_ref.npy", ref["final_state"])
    np.save(ref_dir / "energy_ref.npy", ref["energy"])
    (ref_dir / "pair_minima_ref.json").write_text(
        json.dumps({"t_end": t_end, "pairs": ref["minima"]}, indent=1) + "\n", encoding="utf-8")

    n = int(p["n_bodies"])
    values = {"n_bodies": n, "n_pairs": n * (n - 1) // 2, "t_end": f"{t_end:g}"}
    for level in ("b1", "b2", "b3", "b4"):
        template = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(render(template, values), encoding="utf-8")

    params_used = {k: p[k] for k in sorted(p)}
    meta = {
        "params_used": params_used,
        "input_files": ["data/initial_conditions.json"],
        "reference_files": sorted(f.name for f in ref_dir.iterdir()),
        "reference_rhs_evaluations": ref["nfev"],
    }
    (output_dir / "instance_meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n",
                                                   encoding="utf-8")
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", required=True, type=Path)
    parser.add_argument("--params", default="{}", help="JSON object of parameters")
    args = parser.parse_args()
    generate(args.output_dir, json.loads(args.params))


if __name__ == "__main__":
    main()
