"""Reference solver: per-subject two-compartment fit for proportional error.

The model is integrated through the eigen-decomposition of the 2x2 rate matrix
(amounts in central/peripheral compartments, zero-order infusion), and fitted by
least squares on log concentrations (the likelihood for multiplicative error)
from a spread of starting points.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares


def central_conc(p: np.ndarray, t: np.ndarray, dose: float, t_inf: float) -> np.ndarray:
    cl, v1, q, v2 = p
    k10, k12, k21 = cl / v1, q / v1, q / v2
    kmat = np.array([[-(k10 + k12), k21], [k12, -k21]])
    lam, vec = np.linalg.eig(kmat)
    lam, vec = lam.real, vec.real
    inv = np.linalg.inv(vec)
    u = np.array([dose / t_inf, 0.0])
    # during the infusion: x(t) = V diag((exp(lam t) - 1)/lam) V^-1 u
    g = inv @ u
    tin = np.minimum(t, t_inf)
    mode_amp = g[None, :] * np.expm1(lam[None, :] * tin[:, None]) / lam[None, :]
    # after the infusion each mode decays freely
    mode_amp = mode_amp * np.exp(lam[None, :] * np.clip(t - t_inf, 0.0, None)[:, None])
    amounts = mode_amp @ vec.T
    return amounts[:, 0] / v1


def fit(t: np.ndarray, y: np.ndarray, dose: float, t_inf: float) -> np.ndarray:
    ly = np.log(y)

    def res(lp: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            c = central_conc(np.exp(lp), t, dose, t_inf)
            r = np.log(np.clip(c, 1e-300, None)) - ly
        return np.where(np.isfinite(r), r, 1e3)

    rng = np.random.default_rng(1)
    # rough scale from the data: V1 ~ dose / peak, CL ~ dose / AUC(trapezoid)
    v1_0 = dose / y.max()
    cl_0 = dose / np.trapezoid(np.concatenate([[0.0], y]), np.concatenate([[0.0], t]))
    starts = [np.log([cl_0, v1_0, 2 * cl_0, 3 * v1_0])]
    starts += [np.log([cl_0, v1_0, cl_0, v1_0]) + rng.normal(0, 1.0, 4) for _ in range(10)]
    best = None
    for x0 in starts:
        try:
            sol = least_squares(res, x0, method="lm", xtol=1e-10, ftol=1e-10, gtol=1e-10, max_nfev=300)
        except (ValueError, np.linalg.LinAlgError):
            continue
        if np.all(np.isfinite(sol.fun)) and (best is None or sol.cost < best.cost):
            best = sol
    best = least_squares(res, best.x, method="lm", xtol=1e-14, ftol=1e-14, gtol=1e-14, max_nfev=5000)
    return np.exp(best.x)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ws = ap.parse_args().workspace
    study = json.loads((ws / "data" / "study.json").read_text(encoding="utf-8"))
    with open(ws / "data" / "concentrations.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    t_pred = np.array(study["prediction_times_h"], dtype=float)

    params, halves, aucs, preds = [], [], [], []
    for subj in study["subjects"]:
        sel = [r for r in rows if int(r["subject"]) == int(subj["subject"])]
        t = np.array([float(r["time_h"]) for r in sel])
        y = np.array([float(r["conc_mg_per_L"]) for r in sel])
        dose, t_inf = float(subj["dose_mg"]), float(subj["infusion_duration_h"])
        p = fit(t, y, dose, t_inf)
        cl, v1, q, v2 = p
        k10, k12, k21 = cl / v1, q / v1, q / v2
        lam = np.sort(np.linalg.eigvals(np.array([[-(k10 + k12), k21], [k12, -k21]])).real)
        alpha, beta = -lam[0], -lam[1]
        params.append(p)
        halves.append([np.log(2) / alpha, np.log(2) / beta])
        aucs.append(dose / cl)
        preds.append(central_conc(p, t_pred, dose, t_inf))

    np.save(ws / "pk_parameters.npy", np.array(params, dtype=np.float64))
    np.save(ws / "half_lives.npy", np.array(halves, dtype=np.float64))
    np.save(ws / "auc.npy", np.array(aucs, dtype=np.float64))
    np.save(ws / "predicted_concentrations.npy", np.array(preds, dtype=np.float64))


if __name__ == "__main__":
    main()
