"""Instance generator for biology.gillespie_enzyme_kinetics.

Stochastic Michaelis-Menten kinetics E + S <-> C -> E + P with a few enzyme and
tens of substrate molecules.  The reference is not a simulation: the chemical
master equation (CME) on the finite state space {(s, c)} is solved exactly with
a matrix exponential, and the completion time (absorption into P = S0) is a
phase-type distribution whose moments come from linear solves.  The reference
therefore carries no sampling noise; the scorer compares the agent's Monte-Carlo
statistics with z-scores built from the exact per-trajectory variances.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import numpy as np
from scipy.linalg import lu_factor, lu_solve
from scipy.sparse import csc_matrix
from scipy.sparse.linalg import expm_multiply

TASK_DIR = Path(__file__).resolve().parent

INPUT_SPEC = [
    {"name": "config.json", "type": "json",
     "description": "initial molecule counts, stochastic rate constants, observation times, "
                    "histogram time, required number of trajectories"},
]
OUTPUT_SPEC = [
    {"name": "product_moments.npy", "type": "data"},
    {"name": "product_distribution.npy", "type": "data"},
    {"name": "completion_time.npy", "type": "data"},
]
DEFAULT_PARAMS = {
    "n_enzyme": 3,
    "n_substrate": 25,
    "n_times": 5,
    "n_trajectories": 10000,
    "seed": 0,
}


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def _state_space(e0: int, s0: int) -> tuple[list[tuple[int, int]], dict[tuple[int, int], int]]:
    states = [(s, c) for c in range(min(e0, s0) + 1) for s in range(s0 - c + 1)]
    return states, {st: i for i, st in enumerate(states)}


def _generator(e0: int, s0: int, k1: float, km1: float, k2: float):
    """Column-convention CME generator A (dp/dt = A p) over states (s, c)."""
    states, index = _state_space(e0, s0)
    n = len(states)
    a = np.zeros((n, n))
    for j, (s, c) in enumerate(states):
        e = e0 - c
        moves = (
            (k1 * e * s, (s - 1, c + 1)),  # binding     E + S -> C
            (km1 * c, (s + 1, c - 1)),     # unbinding   C -> E + S
            (k2 * c, (s, c - 1)),          # catalysis   C -> E + P
        )
        for rate, target in moves:
            if rate > 0.0:
                a[index[target], j] += rate
                a[j, j] -= rate
    return states, index, a


def exact_statistics(e0: int, s0: int, k1: float, km1: float, k2: float,
                     times: list[float] | None, t_hist: float | None) -> dict:
    """Exact P distributions at `times` / `t_hist` and completion-time moments.

    With times=None only the completion-time moments are computed (no matrix exponentials).
    """
    states, index, a = _generator(e0, s0, k1, km1, k2)
    n = len(states)
    p0 = np.zeros(n)
    p0[index[(s0, 0)]] = 1.0
    product = np.array([s0 - s - c for s, c in states])

    # completion time = absorption time into (s, c) = (0, 0): phase-type moments
    absorbing = index[(0, 0)]
    keep = [i for i in range(n) if i != absorbing]
    lu = lu_factor(-a[np.ix_(keep, keep)])
    raw = []
    v = p0[keep].copy()
    for order in range(1, 5):
        v = lu_solve(lu, v)
        raw.append(math.factorial(order) * v.sum())
    m1, m2, m3, m4 = raw
    out = {
        "t_mean": m1,
        "t_var": m2 - m1**2,
        "t_mu4": m4 - 4 * m1 * m3 + 6 * m1**2 * m2 - 3 * m1**4,
    }
    if times is None:
        return out

    a_sparse = csc_matrix(a)
    # propagate through the sorted distinct times, chaining the action of the matrix
    # exponential (Al-Mohy & Higham), accurate to double precision
    marginals: dict[float, np.ndarray] = {}
    p, t_prev = p0, 0.0
    for t in sorted(set(times) | {t_hist}):
        p = expm_multiply(a_sparse * (t - t_prev), p)
        t_prev = t
        q = np.clip(p, 0.0, None)
        q /= q.sum()
        pmf = np.zeros(s0 + 1)
        np.add.at(pmf, product, q)
        marginals[t] = pmf

    pmfs = np.stack([marginals[t] for t in times])
    k = np.arange(s0 + 1, dtype=float)
    mean = pmfs @ k
    cen = k[None, :] - mean[:, None]
    out.update({
        "pmfs": pmfs,
        "hist": marginals[t_hist],
        "mean": mean,
        "var": (pmfs * cen**2).sum(axis=1),
        "mu4": (pmfs * cen**4).sum(axis=1),
    })
    return out


def _render(template: str, values: dict) -> str:
    def repl(m: re.Match) -> str:
        return str(values[m.group(1)])
    return re.sub(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", repl, template)


def generate(output_dir: Path, params: dict) -> dict:
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    e0 = int(p["n_enzyme"])
    s0 = int(p["n_substrate"])
    n_times = int(p["n_times"])
    n_traj = int(p["n_trajectories"])
    seed = int(p["seed"])
    if not (1 <= e0 <= 10 and 5 <= s0 <= 60 and 2 <= n_times <= 10 and n_traj >= 1000):
        raise ValueError(f"parameters out of supported range: {p}")

    rng = np.random.default_rng(seed)
    k2 = _sig(rng.uniform(0.5, 2.0))
    km1 = _sig(k2 * rng.uniform(0.2, 2.0))
    km_molecules = s0 * rng.uniform(0.2, 1.5)          # Michaelis constant in molecules
    k1 = _sig((km1 + k2) / km_molecules)

    # pick observation times from the exact mean completion time
    probe = exact_statistics(e0, s0, k1, km1, k2, None, None)
    t_bar = probe["t_mean"]
    fractions = np.linspace(0.1, 0.8, n_times)
    times = [_sig(t_bar * f, 3) for f in fractions]
    t_hist = times[n_times // 2]

    st = exact_statistics(e0, s0, k1, km1, k2, times, t_hist)

    output_dir = Path(output_dir)
    data_dir = output_dir / "data"
    ref_dir = output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)

    config = {
        "reaction_scheme": ["E + S -> C  (k1)", "C -> E + S  (k_minus1)", "C -> E + P  (k2)"],
        "initial_counts": {"E": e0, "S": s0, "C": 0, "P": 0},
        "rate_constants": {"k1": k1, "k_minus1": km1, "k2": k2},
        "rate_constant_units": {"k1": "1/(molecule*s)", "k_minus1": "1/s", "k2": "1/s"},
        "time_unit": "s",
        "observation_times": times,
        "histogram_time": t_hist,
        "n_trajectories": n_traj,
    }
    (data_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")

    moments = np.stack([st["mean"], st["var"]], axis=1).astype(np.float64)
    completion = np.array([st["t_mean"], math.sqrt(st["t_var"])], dtype=np.float64)
    np.save(ref_dir / "product_moments_ref.npy", moments)
    np.save(ref_dir / "product_distribution_ref.npy", st["hist"].astype(np.float64))
    np.save(ref_dir / "completion_time_ref.npy", completion)
    np.save(ref_dir / "product_pmf_ref.npy", st["pmfs"].astype(np.float64))
    # per-trajectory standard deviations of each estimator (SE = value / sqrt(N))
    sampling = {
        "n_trajectories": n_traj,
        "mean_sd": [math.sqrt(v) for v in st["var"]],
        "variance_sd": [math.sqrt(max(m4 - v**2, 0.0)) for m4, v in zip(st["mu4"], st["var"], strict=True)],
        "completion_mean_sd": math.sqrt(st["t_var"]),
        "completion_sd_sd": math.sqrt(max(st["t_mu4"] - st["t_var"] ** 2, 0.0))
        / (2.0 * math.sqrt(st["t_var"])),
    }
    (ref_dir / "sampling_ref.json").write_text(json.dumps(sampling, indent=2) + "\n", encoding="utf-8")

    values = {
        "n_enzyme": e0, "n_substrate": s0, "n_substrate_plus_one": s0 + 1,
        "k1": k1, "k_minus1": km1, "k2": k2, "n_times": n_times,
        "observation_times": ", ".join(f"{t:g}" for t in times),
        "histogram_time": f"{t_hist:g}", "n_trajectories": n_traj,
    }
    for level in ("b1", "b2", "b3", "b4"):
        tpl = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(_render(tpl, values), encoding="utf-8")

    params_used = {"n_enzyme": e0, "n_substrate": s0, "n_times": n_times,
                   "n_trajectories": n_traj, "seed": seed}
    meta = {
        "params_used": params_used,
        "input_files": ["data/config.json"],
        "reference_files": sorted(f.name for f in ref_dir.iterdir()),
    }
    (output_dir / "instance_meta.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return meta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output-dir", required=True, type=Path)
    ap.add_argument("--params", default="{}")
    args = ap.parse_args()
    generate(args.output_dir, json.loads(args.params))


if __name__ == "__main__":
    main()
