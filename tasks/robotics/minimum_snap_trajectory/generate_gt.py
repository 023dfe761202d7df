"""Instance generator for robotics.minimum_snap_trajectory.

Minimum-snap piecewise 7th-order polynomial trajectory (Mellinger & Kumar 2011)
through 3D waypoints with prescribed, badly scaled segment durations.

Reference method: the "free endpoint derivative" formulation (Richter, Bry & Roy
2013).  On each segment the polynomial is the degree-7 Hermite interpolant of
position, velocity, acceleration and jerk at its two ends, written in the
normalised time tau = (t - t_i)/T_i in [0, 1].  The snap cost of a segment is
T_i^-7 h^T H h with h the time-scaled endpoint derivatives, so the total cost
is a quadratic form in the physical knot derivatives; the interior
velocities/accelerations/jerks solve the reduced positive definite system.
Everything is done in exact rational arithmetic (fractions.Fraction) on the
exact binary values of the float64 inputs, so the reference coefficients and
snap costs are correctly rounded, whatever the spread of segment durations.

CLI: python generate_gt.py --output-dir DIR --params JSON
"""

from __future__ import annotations

import argparse
import json
import math
import re
from fractions import Fraction
from pathlib import Path

import numpy as np

INPUT_SPEC = [
    {"name": "waypoints.npy", "type": "data", "description": "waypoint positions (m)"},
    {"name": "segment_times.npy", "type": "data", "description": "segment durations (s)"},
    {"name": "boundary_conditions.json", "type": "json", "description": "start/end derivatives"},
    {"name": "query_times.npy", "type": "data", "description": "sample times (s)"},
]
OUTPUT_SPEC = [
    {"name": "coefficients.npy", "type": "data"},
    {"name": "positions.npy", "type": "data"},
    {"name": "velocities.npy", "type": "data"},
    {"name": "accelerations.npy", "type": "data"},
    {"name": "snap_cost.npy", "type": "data"},
]
DEFAULT_PARAMS = {"n_segments": 6, "spread_decades": 3.0, "n_query_per_segment": 30, "seed": 0}

TASK_DIR = Path(__file__).resolve().parent
DEG = 7
NC = DEG + 1


def _deriv_row(tau, r: int) -> list:
    """Row of d^r/dtau^r [1, tau, ..., tau^7] (exact when tau is a Fraction or int)."""
    row = [0] * NC
    for j in range(r, NC):
        row[j] = math.factorial(j) // math.factorial(j - r) * tau ** (j - r)
    return row


def _exact_solve(a: list, b: list) -> list:
    """Gauss-Jordan elimination in exact rational arithmetic; b holds the RHS rows."""
    n = len(a)
    aug = [list(a[i]) + list(b[i]) for i in range(n)]
    for col in range(n):
        piv = next(r for r in range(col, n) if aug[r][col] != 0)
        aug[col], aug[piv] = aug[piv], aug[col]
        pv = aug[col][col]
        aug[col] = [v / pv for v in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [vr - f * vc for vr, vc in zip(aug[r], aug[col], strict=True)]
    return [row[n:] for row in aug]


def _hermite_inverse() -> list:
    """Exact map from h = (p and derivatives 1-3 at tau=0, then at tau=1) to monomial coefficients."""
    rows = [_deriv_row(Fraction(0), r) for r in range(4)] + [_deriv_row(Fraction(1), r) for r in range(4)]
    eye = [[Fraction(int(i == j)) for j in range(NC)] for i in range(NC)]
    return _exact_solve(rows, eye)


def _snap_gram() -> list:
    """Q[j][l] = int_0^1 p_j''''(tau) p_l''''(tau) dtau for the monomial basis (exact)."""
    q = [[Fraction(0)] * NC for _ in range(NC)]
    for j in range(4, NC):
        for m in range(4, NC):
            cj = math.factorial(j) // math.factorial(j - 4)
            cm = math.factorial(m) // math.factorial(m - 4)
            q[j][m] = Fraction(cj * cm, j + m - 7)
    return q


def _matmul(a: list, b: list) -> list:
    return [[sum(a[i][k] * b[k][j] for k in range(len(b))) for j in range(len(b[0]))] for i in range(len(a))]


def _transpose(a: list) -> list:
    return [list(col) for col in zip(*a, strict=True)]


def solve_min_snap(waypoints: np.ndarray, durations: np.ndarray, start: np.ndarray, end: np.ndarray):
    """Exact-rational minimum-snap solve.

    Returns (coefficients (M, 3, 8) as float64, per-axis snap cost (3,)).  The float64
    inputs are converted exactly to rationals, so the only error in the reference is
    the final rounding to float64.  start/end: rows [vel, acc, jerk], columns axes.
    """
    n_seg = len(durations)
    tf = [Fraction(float(t)) for t in durations]
    minv = _hermite_inverse()
    gram = _snap_gram()
    hmat = _matmul(_matmul(_transpose(minv), gram), minv)
    n_var = 4 * (n_seg + 1)
    qg = [[Fraction(0)] * n_var for _ in range(n_var)]
    for i, t in enumerate(tf):
        s = [t**r for r in range(4)] * 2
        t7 = t ** (-7)
        for p_ in range(8):
            for q_ in range(8):
                qg[4 * i + p_][4 * i + q_] += s[p_] * hmat[p_][q_] * s[q_] * t7
    z = [[Fraction(0)] * 3 for _ in range(n_var)]
    fixed = [False] * n_var
    for k in range(n_seg + 1):
        z[4 * k] = [Fraction(float(v)) for v in waypoints[k]]
        fixed[4 * k] = True
    for r in range(3):
        z[1 + r] = [Fraction(float(v)) for v in start[r]]
        z[4 * n_seg + 1 + r] = [Fraction(float(v)) for v in end[r]]
        fixed[1 + r] = fixed[4 * n_seg + 1 + r] = True
    free = [i for i in range(n_var) if not fixed[i]]
    fix = [i for i in range(n_var) if fixed[i]]
    a = [[qg[i][j] for j in free] for i in free]
    rhs = [[-sum(qg[i][j] * z[j][d] for j in fix) for d in range(3)] for i in free]
    for row, i in zip(_exact_solve(a, rhs), free, strict=True):
        z[i] = row
    coeffs = np.zeros((n_seg, 3, NC))
    cost = [Fraction(0)] * 3
    for i, t in enumerate(tf):
        s = [t**r for r in range(4)] * 2
        h = [[z[4 * i + p_][d] * s[p_] for d in range(3)] for p_ in range(4)]
        h += [[z[4 * (i + 1) + p_][d] * s[4 + p_] for d in range(3)] for p_ in range(4)]
        c = _matmul(minv, h)  # (8, 3)
        for d in range(3):
            col = [c[j][d] for j in range(NC)]
            coeffs[i, d] = [float(v) for v in col]
            seg_cost = sum(col[j] * gram[j][m] * col[m] for j in range(4, NC) for m in range(4, NC))
            cost[d] += seg_cost * t ** (-7)
    return coeffs, np.array([float(v) for v in cost])


def evaluate(coeffs: np.ndarray, durations: np.ndarray, times: np.ndarray, order: int) -> np.ndarray:
    """order-th time derivative (physical units) at the given absolute times."""
    knots = np.concatenate([[0.0], np.cumsum(durations)])
    seg = np.clip(np.searchsorted(knots, times, side="right") - 1, 0, len(durations) - 1)
    out = np.zeros((len(times), 3))
    for n, (t, i) in enumerate(zip(times, seg, strict=True)):
        tau = (t - knots[i]) / durations[i]
        row = np.array(_deriv_row(float(tau), order), dtype=float)
        out[n] = coeffs[i] @ row / durations[i] ** order
    return out


def _render(text: str, values: dict) -> str:
    def repl(match: re.Match) -> str:
        return str(values[match.group(1)])

    return re.sub(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", repl, text)


def _merge(params: dict | None) -> dict:
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    p["n_segments"] = int(p["n_segments"])
    p["spread_decades"] = float(p["spread_decades"])
    p["n_query_per_segment"] = int(p["n_query_per_segment"])
    p["seed"] = int(p["seed"])
    if p["n_segments"] < 2:
        raise ValueError("need at least two segments")
    return p


def generate(output_dir: Path, params: dict) -> dict:
    p = _merge(params)
    rng = np.random.default_rng(p["seed"])
    output_dir = Path(output_dir)
    data_dir = output_dir / "data"
    ref_dir = output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)
    m = p["n_segments"]

    # waypoints: random walk with 1-4 m hops inside a ~10 m workspace
    steps = rng.normal(size=(m, 3))
    steps *= (rng.uniform(1.0, 4.0, size=m) / np.linalg.norm(steps, axis=1))[:, None]
    start_pt = rng.uniform(-2.0, 2.0, size=3)
    waypoints = np.round(np.vstack([start_pt, start_pt + np.cumsum(steps, axis=0)]), 3)

    # durations: log-uniform over `spread_decades` decades around 1 s, both extremes present
    half = 0.5 * p["spread_decades"]
    logs = rng.uniform(-half, half, size=m)
    i_lo, i_hi = rng.choice(m, size=2, replace=False)
    logs[i_lo], logs[i_hi] = -half, half
    durations = np.array([float(f"{10.0**v:.4g}") for v in logs])

    v0 = np.round(rng.uniform(-1.0, 1.0, size=3), 3)
    start = np.vstack([v0, np.zeros(3), np.zeros(3)])
    end = np.zeros((3, 3))

    knots = np.concatenate([[0.0], np.cumsum(durations)])
    q_times = [knots]
    for i in range(m):
        q_times.append(knots[i] + durations[i] * rng.uniform(0.0, 1.0, size=p["n_query_per_segment"]))
    q_times = np.sort(np.concatenate(q_times))

    coeffs, cost = solve_min_snap(waypoints, durations, start, end)
    pos = evaluate(coeffs, durations, q_times, 0)
    vel = evaluate(coeffs, durations, q_times, 1)
    acc = evaluate(coeffs, durations, q_times, 2)

    np.save(data_dir / "waypoints.npy", waypoints.astype(np.float64))
    np.save(data_dir / "segment_times.npy", durations.astype(np.float64))
    bc = {
        "start": {"velocity": v0.tolist(), "acceleration": [0.0, 0.0, 0.0], "jerk": [0.0, 0.0, 0.0]},
        "end": {"velocity": [0.0, 0.0, 0.0], "acceleration": [0.0, 0.0, 0.0], "jerk": [0.0, 0.0, 0.0]},
        "units": "m/s, m/s^2, m/s^3",
    }
    (data_dir / "boundary_conditions.json").write_text(json.dumps(bc, indent=2, sort_keys=True) + "\n")
    np.save(data_dir / "query_times.npy", q_times.astype(np.float64))

    np.save(ref_dir / "coefficients_ref.npy", coeffs)
    np.save(ref_dir / "positions_ref.npy", pos)
    np.save(ref_dir / "velocities_ref.npy", vel)
    np.save(ref_dir / "accelerations_ref.npy", acc)
    np.save(ref_dir / "snap_cost_ref.npy", cost)

    values = {
        "n_segments": m,
        "n_waypoints": m + 1,
        "n_query": len(q_times),
        "t_min": f"{durations.min():g}",
        "t_max": f"{durations.max():g}",
    }
    for level in ("b1", "b2", "b3", "b4"):
        template = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(_render(template, values), encoding="utf-8")

    meta = {
        "params_used": p,
        "input_files": [f"data/{s['name']}" for s in INPUT_SPEC],
        "reference_files": [f"{s['name'][:-4]}_ref.npy" for s in OUTPUT_SPEC],
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
