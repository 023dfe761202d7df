"""Instance generator for electrical_engineering.ac_power_flow_qlimits.

AC power flow of a small meshed transmission grid (pi-model lines with charging,
off-nominal tap transformers, one slack bus, PV generator buses with reactive-power
limits, PQ load buses).  The reference solves the polar power-flow equations by
Newton-Raphson with the complex-derivative Jacobian (MATPOWER's dSbus/dV form) to a
power mismatch below 1e-12 p.u., with PV->PQ switching at violated reactive limits and
PQ->PV back-switching until the bus types are self-consistent.  At least one
generator's reactive limit is made to bind in every instance.

CLI: python generate_gt.py --output-dir DIR --params JSON
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

TASK_DIR = Path(__file__).resolve().parent
BASE_MVA = 100.0

INPUT_SPEC = [{"name": "case.json", "type": "json", "description": "buses, generators, branches (per unit on 100 MVA)"}]
OUTPUT_SPEC = [
    {"name": "voltage_magnitude.npy", "type": "data"},
    {"name": "voltage_angle_deg.npy", "type": "data"},
    {"name": "branch_flows.npy", "type": "data"},
    {"name": "generator_output.npy", "type": "data"},
]
DEFAULT_PARAMS = {"n_bus": 9, "n_extra_branches": 4, "n_pv": 3, "n_transformers": 2, "seed": 0}


class NoSolution(Exception):
    pass


def _merge(params: dict | None) -> dict:
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    for key in DEFAULT_PARAMS:
        p[key] = int(p[key])
    if p["n_bus"] < 4 or not 1 <= p["n_pv"] <= p["n_bus"] - 2:
        raise ValueError("need n_bus >= 4 and 1 <= n_pv <= n_bus - 2")
    return p


def admittance(case: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bus admittance matrix and the per-branch from/to rows (Yf V, Yt V give branch currents)."""
    n = len(case["buses"])
    br = case["branches"]
    ybus = np.zeros((n, n), dtype=complex)
    yf = np.zeros((len(br), n), dtype=complex)
    yt = np.zeros((len(br), n), dtype=complex)
    for k, b in enumerate(br):
        f, t = b["from_bus"], b["to_bus"]
        ys = 1.0 / complex(b["r_pu"], b["x_pu"])
        bc = 0.5j * b["b_pu"]
        tau = b["tap_ratio"]
        yff, yft, ytf, ytt = (ys + bc) / tau**2, -ys / tau, -ys / tau, ys + bc
        ybus[f, f] += yff
        ybus[f, t] += yft
        ybus[t, f] += ytf
        ybus[t, t] += ytt
        yf[k, f], yf[k, t] = yff, yft
        yt[k, f], yt[k, t] = ytf, ytt
    for i, bus in enumerate(case["buses"]):
        ybus[i, i] += complex(bus["gs_mw"], bus["bs_mvar"]) / BASE_MVA
    return ybus, yf, yt


def newton(ybus: np.ndarray, sbus: np.ndarray, v0: np.ndarray, pv: list[int], pq: list[int],
           tol: float = 1e-12, max_iter: int = 30) -> np.ndarray:
    """Polar Newton-Raphson with the complex Jacobian dS/dVa, dS/dVm (Zimmerman et al., MATPOWER)."""
    v = v0.astype(complex)
    pvpq = pv + pq
    for _ in range(max_iter):
        mis = v * np.conj(ybus @ v) - sbus
        f = np.concatenate([mis.real[pvpq], mis.imag[pq]])
        if np.max(np.abs(f), initial=0.0) < tol:
            return v
        ibus = ybus @ v
        diag_v = np.diag(v)
        vnorm = np.diag(v / np.abs(v))
        ds_dva = 1j * diag_v @ np.conj(np.diag(ibus) - ybus @ diag_v)
        ds_dvm = diag_v @ np.conj(ybus @ vnorm) + np.conj(np.diag(ibus)) @ vnorm
        jac = np.block([
            [ds_dva.real[np.ix_(pvpq, pvpq)], ds_dvm.real[np.ix_(pvpq, pq)]],
            [ds_dva.imag[np.ix_(pq, pvpq)], ds_dvm.imag[np.ix_(pq, pq)]],
        ])
        dx = np.linalg.solve(jac, -f)
        va, vm = np.angle(v), np.abs(v)
        va[pvpq] += dx[: len(pvpq)]
        vm[pq] += dx[len(pvpq):]
        v = vm * np.exp(1j * va)
    raise NoSolution("Newton-Raphson did not converge")


def solve_case(case: dict, enforce_q_limits: bool = True) -> dict:
    """Power flow with PV->PQ switching (all violators at once) and PQ->PV back-switching."""
    buses, gens = case["buses"], case["generators"]
    n = len(buses)
    ybus, yf, yt = admittance(case)
    load = np.array([complex(b["pd_mw"], b["qd_mvar"]) for b in buses]) / BASE_MVA
    slack = next(i for i, b in enumerate(buses) if b["type"] == "slack")
    gen_at = {g["bus"]: g for g in gens}
    at_limit: dict[int, float] = {}  # bus -> fixed Qg (p.u.) while switched to PQ
    for _ in range(4 * len(gens) + 4):
        pv = [g["bus"] for g in gens if g["bus"] != slack and g["bus"] not in at_limit]
        pq = [i for i in range(n) if i != slack and i not in pv]
        sbus = -load.copy()
        for g in gens:
            sbus[g["bus"]] += g["pg_mw"] / BASE_MVA
        for bus, q in at_limit.items():
            sbus[bus] += 1j * q
        v0 = np.ones(n, dtype=complex)
        for g in gens:
            if g["bus"] not in at_limit:
                v0[g["bus"]] = g["vset_pu"]
        v = newton(ybus, sbus, v0, pv, pq)
        qg = (v * np.conj(ybus @ v)).imag + load.imag
        changed = False
        if enforce_q_limits:
            for bus in pv:
                g = gen_at[bus]
                if qg[bus] > g["qmax_mvar"] / BASE_MVA + 1e-9:
                    at_limit[bus], changed = g["qmax_mvar"] / BASE_MVA, True
                elif qg[bus] < g["qmin_mvar"] / BASE_MVA - 1e-9:
                    at_limit[bus], changed = g["qmin_mvar"] / BASE_MVA, True
            for bus, q in list(at_limit.items()):
                g = gen_at[bus]
                at_max = q == g["qmax_mvar"] / BASE_MVA
                rises, falls = abs(v[bus]) > g["vset_pu"] + 1e-12, abs(v[bus]) < g["vset_pu"] - 1e-12
                if (at_max and rises) or (not at_max and falls):
                    del at_limit[bus]
                    changed = True
        if not changed:
            break
    else:
        raise NoSolution("reactive-limit switching did not settle")
    sinj = v * np.conj(ybus @ v)
    sf = v[[b["from_bus"] for b in case["branches"]]] * np.conj(yf @ v)
    st = v[[b["to_bus"] for b in case["branches"]]] * np.conj(yt @ v)
    gen_out = np.array([[(sinj[g["bus"]] + load[g["bus"]]).real, (sinj[g["bus"]] + load[g["bus"]]).imag]
                        for g in gens]) * BASE_MVA
    return {
        "v": v,
        "flows": np.stack([sf.real, sf.imag, st.real, st.imag], axis=1) * BASE_MVA,
        "gen": gen_out,
        "limited": sorted(at_limit),
    }


def _r(x: float, nd: int) -> float:
    return float(round(float(x), nd))


def _draw_case(rng: np.random.Generator, p: dict) -> dict:
    n = p["n_bus"]
    edges = [(int(rng.integers(0, i)), i) for i in range(1, n)]  # random spanning tree
    existing = {tuple(sorted(e)) for e in edges}
    tries = 0
    while len(edges) < n - 1 + p["n_extra_branches"] and tries < 1000:
        tries += 1
        a, b = (int(v) for v in rng.choice(n, 2, replace=False))
        if tuple(sorted((a, b))) not in existing:
            existing.add(tuple(sorted((a, b))))
            edges.append((a, b))
    if len(edges) != n - 1 + p["n_extra_branches"]:
        raise ValueError("n_extra_branches exceeds the number of possible extra branches")
    trafo = set(rng.choice(len(edges), size=min(p["n_transformers"], len(edges)), replace=False).tolist())
    branches = []
    for k, (a, b) in enumerate(edges):
        x = rng.uniform(0.04, 0.18)
        if k in trafo:
            branches.append({"from_bus": a, "to_bus": b, "r_pu": _r(x * rng.uniform(0.02, 0.08), 5),
                             "x_pu": _r(x, 5), "b_pu": 0.0, "tap_ratio": _r(rng.uniform(0.95, 1.05), 4)})
        else:
            branches.append({"from_bus": a, "to_bus": b, "r_pu": _r(x * rng.uniform(0.1, 0.35), 5),
                             "x_pu": _r(x, 5), "b_pu": _r(rng.uniform(0.01, 0.08), 5), "tap_ratio": 1.0})
    gen_buses = [0, *sorted(int(v) for v in rng.choice(np.arange(1, n), p["n_pv"], replace=False))]
    buses = []
    for i in range(n):
        pd = 0.0 if i == 0 else rng.uniform(10.0, 70.0)
        pf = rng.uniform(0.8, 0.97)
        bus = {"index": i, "type": "slack" if i == 0 else ("pv" if i in gen_buses else "pq"),
               "pd_mw": _r(pd, 2), "qd_mvar": _r(pd * np.tan(np.arccos(pf)), 2), "gs_mw": 0.0, "bs_mvar": 0.0}
        buses.append(bus)
    shunt_bus = int(rng.integers(1, n))
    buses[shunt_bus]["bs_mvar"] = _r(rng.uniform(5.0, 25.0), 2)  # a switched capacitor bank
    total_load = sum(b["pd_mw"] for b in buses)
    shares = rng.dirichlet(np.ones(p["n_pv"])) * total_load * rng.uniform(0.5, 0.8)
    gens = [{"bus": 0, "pg_mw": 0.0, "vset_pu": _r(rng.uniform(1.0, 1.05), 4), "qmin_mvar": -9999.0,
             "qmax_mvar": 9999.0}]
    for bus, pg in zip(gen_buses[1:], shares, strict=True):
        gens.append({"bus": bus, "pg_mw": _r(pg, 2), "vset_pu": _r(rng.uniform(0.99, 1.05), 4),
                     "qmin_mvar": 0.0, "qmax_mvar": 0.0})
    return {"base_mva": BASE_MVA, "buses": buses, "generators": gens, "branches": branches}


def build_instance(rng: np.random.Generator, p: dict) -> tuple[dict, dict]:
    for _ in range(200):
        case = _draw_case(rng, p)
        try:
            free = solve_case(case, enforce_q_limits=False)
        except NoSolution:
            continue
        # limits: roomy for all but the generator with the largest reactive output, which is capped
        q_free = free["gen"][:, 1]
        cap = 1 + int(np.argmax(q_free[1:]))
        if q_free[cap] < 5.0:
            continue
        for j, g in enumerate(case["generators"][1:], start=1):
            if j == cap:
                g["qmax_mvar"] = _r(q_free[j] * rng.uniform(0.55, 0.8), 2)
                g["qmin_mvar"] = _r(-0.5 * g["qmax_mvar"], 2)
            else:
                g["qmax_mvar"] = _r(max(q_free[j], 0.0) + rng.uniform(30.0, 60.0), 2)
                g["qmin_mvar"] = _r(min(q_free[j], 0.0) - rng.uniform(20.0, 40.0), 2)
        try:
            sol = solve_case(case)
        except NoSolution:
            continue
        vm = np.abs(sol["v"])
        if sol["limited"] and vm.min() > 0.88 and vm.max() < 1.12:
            return case, sol
    raise RuntimeError("could not draw a solvable case")


def generate(output_dir: Path, params: dict) -> dict:
    p = _merge(params)
    rng = np.random.default_rng(p["seed"])
    output_dir = Path(output_dir)
    data_dir = output_dir / "data"
    ref_dir = output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)

    case, sol = build_instance(rng, p)
    case["conventions"] = (
        "Bus indices are 0-based. Powers in MW/MVAr on base_mva; r_pu, x_pu, b_pu (total line charging) "
        "per unit. tap_ratio is the off-nominal turns ratio at the from_bus side (1.0 for lines). "
        "gs_mw/bs_mvar: shunt admittance at 1.0 p.u. voltage (positive bs_mvar injects reactive power)."
    )
    (data_dir / "case.json").write_text(json.dumps(case, indent=2, sort_keys=True) + "\n")
    np.save(ref_dir / "voltage_magnitude_ref.npy", np.abs(sol["v"]).astype(np.float64))
    np.save(ref_dir / "voltage_angle_deg_ref.npy", np.degrees(np.angle(sol["v"])).astype(np.float64))
    np.save(ref_dir / "branch_flows_ref.npy", sol["flows"].astype(np.float64))
    np.save(ref_dir / "generator_output_ref.npy", sol["gen"].astype(np.float64))

    values = {"n_bus": p["n_bus"], "n_branch": len(case["branches"]), "n_gen": len(case["generators"])}
    for level in ("b1", "b2", "b3", "b4"):
        template = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(_render(template, values), encoding="utf-8")
    meta = {
        "params_used": p,
        "input_files": ["case.json"],
        "reference_files": [s["name"].replace(".npy", "_ref.npy") for s in OUTPUT_SPEC],
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
