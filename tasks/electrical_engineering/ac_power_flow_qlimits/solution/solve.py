"""Reference solver for the AC power-flow task (agent-style, independent of the generator).

The real polar power-balance equations P_i(V, theta), Q_i(V, theta) are solved with
MINPACK's hybrid Powell method (scipy.optimize.root), not Newton-Raphson.  Reactive
limits are enforced one generator at a time (largest violation first), with a limited
bus returned to voltage control when its voltage moves to the wrong side of its set point.

Usage: python solve.py --workspace W
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy.optimize import root


def ybus_matrix(case: dict) -> np.ndarray:
    n = len(case["buses"])
    y = np.zeros((n, n), dtype=complex)
    for br in case["branches"]:
        f, t, tau = br["from_bus"], br["to_bus"], br["tap_ratio"]
        ys = 1.0 / complex(br["r_pu"], br["x_pu"])
        half_b = 0.5j * br["b_pu"]
        y[f, f] += (ys + half_b) / tau**2
        y[t, t] += ys + half_b
        y[f, t] -= ys / tau
        y[t, f] -= ys / tau
    for i, bus in enumerate(case["buses"]):
        y[i, i] += complex(bus["gs_mw"], bus["bs_mvar"]) / case["base_mva"]
    return y


def power_flow(case: dict, enforce_limits: bool = True) -> dict:
    base = case["base_mva"]
    buses, gens = case["buses"], case["generators"]
    n = len(buses)
    y = ybus_matrix(case)
    g_mat, b_mat = y.real, y.imag
    pd = np.array([b["pd_mw"] for b in buses]) / base
    qd = np.array([b["qd_mvar"] for b in buses]) / base
    slack = next(i for i, b in enumerate(buses) if b["type"] == "slack")
    pg = np.zeros(n)
    vset = {}
    for g in gens:
        pg[g["bus"]] += g["pg_mw"] / base
        vset[g["bus"]] = g["vset_pu"]
    limits = {g["bus"]: (g["qmin_mvar"] / base, g["qmax_mvar"] / base) for g in gens if g["bus"] != slack}
    fixed_q: dict[int, float] = {}

    def injections(vm: np.ndarray, va: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = va[:, None] - va[None, :]
        p = vm * ((g_mat * np.cos(d) + b_mat * np.sin(d)) @ vm)
        q = vm * ((g_mat * np.sin(d) - b_mat * np.cos(d)) @ vm)
        return p, q

    def solve_types(pq: list[int], fixed_q: dict[int, float]) -> tuple[np.ndarray, np.ndarray]:
        """Voltages for one assignment of bus types (PQ buses listed, fixed generator Q given)."""
        ang_idx = [i for i in range(n) if i != slack]
        qspec = -qd.copy()
        for b, q in fixed_q.items():
            qspec[b] += q

        def unpack(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            vm = np.array([vset.get(i, 1.0) for i in range(n)], dtype=float)
            va = np.zeros(n)
            va[ang_idx] = z[: len(ang_idx)]
            vm[pq] = z[len(ang_idx):]
            return vm, va

        def residual(z: np.ndarray) -> np.ndarray:
            vm, va = unpack(z)
            p, q = injections(vm, va)
            return np.concatenate([(p - (pg - pd))[ang_idx], (q - qspec)[pq]])

        z0 = np.concatenate([np.zeros(len(ang_idx)), np.ones(len(pq))])
        sol = root(residual, z0, method="hybr", options={"xtol": 1e-14, "maxfev": 20000})
        if np.max(np.abs(residual(sol.x))) > 1e-10:
            raise RuntimeError(f"power flow did not converge: {sol.message}")
        return unpack(sol.x)

    for _ in range(10 * len(gens) + 10):
        pv = [b for b in limits if b not in fixed_q]
        pq = [i for i in range(n) if i != slack and i not in pv]
        vm, va = solve_types(pq, fixed_q)
        p, q = injections(vm, va)
        qgen = q + qd
        if not enforce_limits:
            break
        worst, worst_bus, worst_q = 1e-9, None, 0.0
        for b in pv:
            lo, hi = limits[b]
            if qgen[b] - hi > worst:
                worst, worst_bus, worst_q = qgen[b] - hi, b, hi
            if lo - qgen[b] > worst:
                worst, worst_bus, worst_q = lo - qgen[b], b, lo
        if worst_bus is not None:
            fixed_q[worst_bus] = worst_q
            continue
        back = [b for b, qv in fixed_q.items()
                if (qv == limits[b][1] and vm[b] > vset[b] + 1e-12)
                or (qv == limits[b][0] and vm[b] < vset[b] - 1e-12)]
        if not back:
            break
        del fixed_q[back[0]]
    v = vm * np.exp(1j * va)
    flows = []
    for br in case["branches"]:
        f, t, tau = br["from_bus"], br["to_bus"], br["tap_ratio"]
        ys = 1.0 / complex(br["r_pu"], br["x_pu"])
        half_b = 0.5j * br["b_pu"]
        i_f = (ys + half_b) / tau**2 * v[f] - ys / tau * v[t]
        i_t = (ys + half_b) * v[t] - ys / tau * v[f]
        s_f, s_t = v[f] * np.conj(i_f) * base, v[t] * np.conj(i_t) * base
        flows.append([s_f.real, s_f.imag, s_t.real, s_t.imag])
    gen_out = [[(p[g["bus"]] + pd[g["bus"]]) * base, qgen[g["bus"]] * base] for g in gens]
    return {"vm": vm, "va_deg": np.degrees(va), "flows": np.array(flows), "gen": np.array(gen_out)}


def write(ws: Path, res: dict) -> None:
    np.save(ws / "voltage_magnitude.npy", res["vm"].astype(np.float64))
    np.save(ws / "voltage_angle_deg.npy", res["va_deg"].astype(np.float64))
    np.save(ws / "branch_flows.npy", res["flows"].astype(np.float64))
    np.save(ws / "generator_output.npy", res["gen"].astype(np.float64))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    case = json.loads((ws / "data" / "case.json").read_text())
    write(ws, power_flow(case))


if __name__ == "__main__":
    main()
