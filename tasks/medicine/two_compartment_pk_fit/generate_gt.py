"""Instance generator for medicine.two_compartment_pk_fit.

Each subject receives a constant-rate intravenous infusion into the central
compartment of a linear two-compartment model (CL, V1, Q, V2).  Observed
concentrations carry multiplicative (proportional, constant-CV) log-normal
error.  The reference is not the true parameter set but the maximum-likelihood
fit under that error model (least squares on log concentrations), found with a
multi-start Levenberg-Marquardt search and polished to machine precision.
Derived quantities (alpha/beta half-lives, AUC0-inf = dose/CL, predictions at
new times) are computed from the fitted parameters.  Asymptotic relative
standard errors of every parameter are stored for the scorer's tolerances.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import re
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

TASK_DIR = Path(__file__).resolve().parent

INPUT_SPEC = [
    {"name": "concentrations.csv", "type": "data",
     "description": "subject, time_h, conc_mg_per_L: observed plasma concentrations"},
    {"name": "study.json", "type": "json",
     "description": "per-subject dose and infusion duration, prediction times, units"},
]
OUTPUT_SPEC = [
    {"name": "pk_parameters.npy", "type": "data"},
    {"name": "half_lives.npy", "type": "data"},
    {"name": "auc.npy", "type": "data"},
    {"name": "predicted_concentrations.npy", "type": "data"},
]
DEFAULT_PARAMS = {
    "n_subjects": 6,
    "cv": 0.1,
    "infusion_hours": 0.5,
    "seed": 0,
}

SAMPLE_TIMES = [0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 24.0, 36.0]
PREDICTION_TIMES = [0.1, 0.4, 0.9, 2.5, 5.0, 10.0, 18.0, 30.0, 48.0]
TYPICAL = {"CL": 5.0, "V1": 15.0, "Q": 12.0, "V2": 40.0}    # L/h, L, L/h, L
IIV_SD = 0.3                                                 # log-scale between-subject SD


def macro_constants(cl: float, v1: float, q: float, v2: float) -> tuple[float, float, float]:
    """alpha, beta (1/h) and k21 of the bi-exponential disposition."""
    k10, k12, k21 = cl / v1, q / v1, q / v2
    total = k10 + k12 + k21
    disc = math.sqrt(max(total * total - 4.0 * k10 * k21, 0.0))
    alpha = 0.5 * (total + disc)
    beta = k10 * k21 / alpha      # numerically stable small root
    return alpha, beta, k21


def concentration(theta: np.ndarray, t: np.ndarray, dose: float, t_inf: float) -> np.ndarray:
    """Central concentration for a zero-order infusion of `dose` over `t_inf` hours."""
    cl, v1, q, v2 = np.exp(theta)
    alpha, beta, k21 = macro_constants(cl, v1, q, v2)
    rate = dose / t_inf
    t = np.asarray(t, dtype=float)
    out = np.zeros_like(t)
    for lam, coef in ((alpha, (alpha - k21) / (alpha - beta)), (beta, (k21 - beta) / (alpha - beta))):
        amp = rate * coef / (v1 * lam)
        during = amp * (1.0 - np.exp(-lam * np.minimum(t, t_inf)))
        after = np.exp(-lam * np.clip(t - t_inf, 0.0, None))
        out += during * after
    return out


def fit_subject(t: np.ndarray, y: np.ndarray, dose: float, t_inf: float) -> tuple[np.ndarray, float, np.ndarray]:
    """Global log-scale least-squares fit; returns (log-params, cost, covariance of log-params)."""
    logy = np.log(y)

    def resid(theta: np.ndarray) -> np.ndarray:
        c = concentration(theta, t, dose, t_inf)
        return np.log(np.maximum(c, 1e-300)) - logy

    grid = np.log(np.array([[cl, v1, q, v2]
                            for cl in (1.5, 5.0, 15.0)
                            for v1 in (5.0, 15.0, 45.0)
                            for q in (3.0, 12.0, 40.0)
                            for v2 in (12.0, 40.0, 120.0)]))
    # cheap screen of the grid, then local fits from the most promising starts
    costs = np.array([np.sum(resid(g) ** 2) for g in grid])
    starts = grid[np.argsort(costs)[:12]]
    best = None
    for x0 in starts:
        sol = least_squares(resid, x0, method="lm", xtol=1e-12, ftol=1e-12, gtol=1e-12, max_nfev=300)
        if best is None or sol.cost < best.cost - 1e-13:
            best = sol
    sol = least_squares(resid, best.x, method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=5000)
    if sol.cost <= best.cost:
        best = sol
    jac = best.jac
    dof = max(len(t) - 4, 1)
    s2 = 2.0 * best.cost / dof
    cov = s2 * np.linalg.pinv(jac.T @ jac)
    return best.x, float(best.cost), cov


def log_outputs(theta: np.ndarray, dose: float, t_inf: float, t_pred: np.ndarray) -> np.ndarray:
    """log of every scored quantity: CL, V1, Q, V2, t1/2 alpha, t1/2 beta, AUC, C(t_pred)."""
    cl, v1, q, v2 = np.exp(theta)
    alpha, beta, _ = macro_constants(cl, v1, q, v2)
    conc = concentration(theta, t_pred, dose, t_inf)
    return np.concatenate([theta, np.log([math.log(2.0) / alpha, math.log(2.0) / beta, dose / cl]),
                           np.log(conc)])


def log_standard_errors(theta: np.ndarray, cov: np.ndarray, dose: float, t_inf: float,
                        t_pred: np.ndarray) -> np.ndarray:
    """Delta-method asymptotic SEs of log_outputs (i.e. relative SEs)."""
    h = 1e-6
    cols = []
    for k in range(theta.size):
        step = np.zeros_like(theta)
        step[k] = h
        cols.append((log_outputs(theta + step, dose, t_inf, t_pred)
                     - log_outputs(theta - step, dose, t_inf, t_pred)) / (2 * h))
    jac = np.stack(cols, axis=1)
    return np.sqrt(np.clip(np.einsum("ij,jk,ik->i", jac, cov, jac), 0.0, None))


def _render(template: str, values: dict) -> str:
    return re.sub(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", lambda m: str(values[m.group(1)]), template)


def generate(output_dir: Path, params: dict) -> dict:
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    n_sub = int(p["n_subjects"])
    cv = float(p["cv"])
    t_inf = float(p["infusion_hours"])
    seed = int(p["seed"])
    if not (1 <= n_sub <= 20 and 0.0 < cv <= 0.3 and 0.0 < t_inf <= 2.0):
        raise ValueError(f"parameters out of supported range: {p}")
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log(1.0 + cv * cv))   # log-normal SD giving the stated CV

    t_obs = np.array(SAMPLE_TIMES)
    t_pred = np.array(PREDICTION_TIMES)
    subjects = []
    rows = []
    true_params = []
    for i in range(n_sub):
        eta = rng.normal(0.0, IIV_SD, size=4)
        true = np.array([TYPICAL[k] for k in ("CL", "V1", "Q", "V2")]) * np.exp(eta)
        true = np.array([float(f"{v:.4g}") for v in true])
        dose = float(rng.choice([100.0, 200.0, 250.0, 400.0, 500.0]))
        c_true = concentration(np.log(true), t_obs, dose, t_inf)
        y = c_true * np.exp(sigma * rng.standard_normal(t_obs.size))
        y = np.array([float(f"{v:.4g}") for v in y])          # 4 significant digits as from an assay
        subjects.append({"subject": i + 1, "dose_mg": dose, "infusion_duration_h": t_inf})
        true_params.append(true)
        rows.extend((i + 1, float(tt), float(yy)) for tt, yy in zip(t_obs, y, strict=True))

    output_dir = Path(output_dir)
    data_dir = output_dir / "data"
    ref_dir = output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["subject", "time_h", "conc_mg_per_L"])
    for sid, tt, yy in rows:
        writer.writerow([sid, f"{tt:g}", f"{yy:.4g}"])
    (data_dir / "concentrations.csv").write_text(buf.getvalue(), encoding="utf-8")
    study = {
        "route": "intravenous constant-rate infusion into the central compartment",
        "subjects": subjects,
        "prediction_times_h": PREDICTION_TIMES,
        "units": {"time": "h", "concentration": "mg/L", "dose": "mg",
                  "CL": "L/h", "V1": "L", "Q": "L/h", "V2": "L", "AUC": "mg*h/L"},
    }
    (data_dir / "study.json").write_text(json.dumps(study, indent=2) + "\n", encoding="utf-8")

    # fit from the written (rounded) data, exactly what the agent sees
    params_ref = np.zeros((n_sub, 4))
    se_ref = np.zeros((n_sub, 7 + t_pred.size))
    half_ref = np.zeros((n_sub, 2))
    auc_ref = np.zeros(n_sub)
    pred_ref = np.zeros((n_sub, t_pred.size))
    obj_ref = np.zeros(n_sub)
    for i, subj in enumerate(subjects):
        y = np.array([r[2] for r in rows if r[0] == i + 1])
        theta, cost, cov = fit_subject(t_obs, y, subj["dose_mg"], t_inf)
        se_ref[i] = log_standard_errors(theta, cov, subj["dose_mg"], t_inf, t_pred)
        cl, v1, q, v2 = np.exp(theta)
        alpha, beta, _ = macro_constants(cl, v1, q, v2)
        params_ref[i] = [cl, v1, q, v2]
        half_ref[i] = [math.log(2.0) / alpha, math.log(2.0) / beta]
        auc_ref[i] = subj["dose_mg"] / cl
        pred_ref[i] = concentration(theta, t_pred, subj["dose_mg"], t_inf)
        obj_ref[i] = 2.0 * cost

    np.save(ref_dir / "pk_parameters_ref.npy", params_ref)
    np.save(ref_dir / "half_lives_ref.npy", half_ref)
    np.save(ref_dir / "auc_ref.npy", auc_ref)
    np.save(ref_dir / "predicted_concentrations_ref.npy", pred_ref)
    # asymptotic SEs on the log scale (relative SEs) of every scored quantity
    np.save(ref_dir / "pk_parameters_se_ref.npy", se_ref[:, 0:4])
    np.save(ref_dir / "half_lives_se_ref.npy", se_ref[:, 4:6])
    np.save(ref_dir / "auc_se_ref.npy", se_ref[:, 6])
    np.save(ref_dir / "predicted_concentrations_se_ref.npy", se_ref[:, 7:])
    np.save(ref_dir / "true_parameters_ref.npy", np.array(true_params))
    np.save(ref_dir / "log_sse_ref.npy", obj_ref)

    values = {"n_subjects": n_sub, "n_prediction_times": t_pred.size,
              "cv_percent": f"{100 * cv:.0f}", "infusion_hours": f"{t_inf:g}",
              "prediction_times": ", ".join(f"{x:g}" for x in PREDICTION_TIMES)}
    for level in ("b1", "b2", "b3", "b4"):
        tpl = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(_render(tpl, values), encoding="utf-8")

    meta = {
        "params_used": {"n_subjects": n_sub, "cv": cv, "infusion_hours": t_inf, "seed": seed},
        "input_files": ["data/concentrations.csv", "data/study.json"],
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
