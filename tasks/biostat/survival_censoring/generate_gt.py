"""Instance generator for biostat.survival_censoring.

A two-arm trial with right-censored, week-grouped (hence tied) survival times:
Weibull event times under proportional hazards, administrative censoring from
staggered entry plus random dropout.  Reference answers are exact closed forms:
Kaplan-Meier with Greenwood standard errors, KM medians, the (Mantel-Haenszel)
log-rank test with the hypergeometric variance, and the Cox partial-likelihood
estimate with Breslow's tie handling, solved by Newton's method to 1e-12.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import re
from pathlib import Path

import numpy as np
from scipy.stats import chi2

TASK_DIR = Path(__file__).resolve().parent

INPUT_SPEC = [
    {"name": "survival.csv", "type": "data",
     "description": "patient_id, arm (0 control / 1 treatment), time_weeks, event (1 event / 0 censored)"},
    {"name": "analysis.json", "type": "json", "description": "evaluation times (weeks) and arm coding"},
]
OUTPUT_SPEC = [
    {"name": "km_estimates.npy", "type": "data"},
    {"name": "km_standard_errors.npy", "type": "data"},
    {"name": "median_survival.npy", "type": "data"},
    {"name": "logrank.npy", "type": "data"},
    {"name": "cox_model.npy", "type": "data"},
]
DEFAULT_PARAMS = {
    "n_control": 100,
    "n_treatment": 100,
    "hazard_ratio": 0.7,
    "dropout_rate": 0.2,
    "n_eval": 4,
    "seed": 0,
}


def kaplan_meier(time: np.ndarray, event: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct event times, KM survival just after each, Greenwood variance sum."""
    ev_times = np.unique(time[event == 1])
    surv = np.empty(ev_times.size)
    gw = np.empty(ev_times.size)
    s, acc = 1.0, 0.0
    for i, t in enumerate(ev_times):
        n = np.sum(time >= t)                       # censored at t are still at risk
        d = np.sum((time == t) & (event == 1))
        s *= 1.0 - d / n
        acc += d / (n * (n - d)) if n > d else math.inf
        surv[i], gw[i] = s, acc
    return ev_times, surv, gw


def km_at(ev_times: np.ndarray, surv: np.ndarray, gw: np.ndarray, t: float) -> tuple[float, float]:
    k = np.searchsorted(ev_times, t, side="right") - 1    # right-continuous: includes events at t
    if k < 0:
        return 1.0, 0.0
    return float(surv[k]), float(surv[k] * math.sqrt(gw[k]))


def logrank(time: np.ndarray, event: np.ndarray, arm: np.ndarray) -> tuple[float, float]:
    o_minus_e, var = 0.0, 0.0
    for t in np.unique(time[event == 1]):
        at_risk = time >= t
        n, n1 = at_risk.sum(), (at_risk & (arm == 1)).sum()
        d = ((time == t) & (event == 1)).sum()
        d1 = ((time == t) & (event == 1) & (arm == 1)).sum()
        o_minus_e += d1 - d * n1 / n
        if n > 1:
            var += d * (n1 / n) * (1.0 - n1 / n) * (n - d) / (n - 1)
    stat = o_minus_e**2 / var
    return float(stat), float(chi2.sf(stat, 1))


def cox_breslow(time: np.ndarray, event: np.ndarray, x: np.ndarray) -> tuple[float, float]:
    """Newton-Raphson on the Breslow partial likelihood for one binary covariate."""
    ev_t = np.unique(time[event == 1])
    d = np.array([((time == t) & (event == 1)).sum() for t in ev_t], dtype=float)
    s = np.array([((time == t) & (event == 1) & (x == 1)).sum() for t in ev_t], dtype=float)
    n0 = np.array([((time >= t) & (x == 0)).sum() for t in ev_t], dtype=float)
    n1 = np.array([((time >= t) & (x == 1)).sum() for t in ev_t], dtype=float)
    beta = 0.0
    for _ in range(200):
        w = n1 * math.exp(beta)
        frac = w / (n0 + w)
        score = np.sum(s - d * frac)
        info = np.sum(d * frac * (1.0 - frac))
        step = score / info
        beta += step
        if abs(step) < 1e-12:
            break
    else:
        raise RuntimeError("Cox Newton iteration did not converge")
    w = n1 * math.exp(beta)
    frac = w / (n0 + w)
    info = np.sum(d * frac * (1.0 - frac))
    return float(beta), float(1.0 / math.sqrt(info))


def km_median(ev_times: np.ndarray, surv: np.ndarray) -> float:
    below = np.nonzero(surv <= 0.5)[0]
    return float(ev_times[below[0]]) if below.size else math.nan


def _simulate(rng: np.random.Generator, n0: int, n1: int, hr: float, dropout: float):
    shape = rng.uniform(1.0, 1.6)
    median0 = rng.uniform(40.0, 80.0)                 # weeks
    scale0 = median0 / math.log(2.0) ** (1.0 / shape)
    arm = np.concatenate([np.zeros(n0, dtype=int), np.ones(n1, dtype=int)])
    rng.shuffle(arm)
    scale = np.where(arm == 1, scale0 * hr ** (-1.0 / shape), scale0)
    t_event = scale * (-np.log(rng.random(arm.size))) ** (1.0 / shape)
    study_end, accrual = 3.5 * median0, 1.0 * median0
    t_admin = study_end - rng.uniform(0.0, accrual, arm.size)
    lam_c = dropout * math.log(2.0) / median0
    t_drop = rng.exponential(1.0 / lam_c, arm.size) if lam_c > 0 else np.full(arm.size, np.inf)
    t_cens = np.minimum(t_admin, t_drop)
    event = (t_event <= t_cens).astype(int)
    t_obs = np.minimum(t_event, t_cens)
    weeks = np.maximum(np.ceil(t_obs), 1.0).astype(int)   # recorded in whole weeks -> ties
    return arm, weeks, event


def _eval_times(weeks: np.ndarray, n_eval: int) -> list[int]:
    qs = np.quantile(weeks, np.linspace(0.15, 0.7, n_eval))
    out: list[int] = []
    for q in qs:
        v = int(4 * max(1, round(q / 4)))
        if out and v <= out[-1]:
            v = out[-1] + 4
        out.append(v)
    return out


def _render(template: str, values: dict) -> str:
    return re.sub(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", lambda m: str(values[m.group(1)]), template)


def generate(output_dir: Path, params: dict) -> dict:
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    n0, n1 = int(p["n_control"]), int(p["n_treatment"])
    hr = float(p["hazard_ratio"])
    dropout = float(p["dropout_rate"])
    n_eval = int(p["n_eval"])
    seed = int(p["seed"])
    if not (10 <= n0 <= 1000 and 10 <= n1 <= 1000 and 0.2 <= hr <= 1.5 and 0 <= dropout <= 2 and 2 <= n_eval <= 8):
        raise ValueError(f"parameters out of supported range: {p}")
    rng = np.random.default_rng(seed)

    for _attempt in range(200):
        arm, weeks, event = _simulate(rng, n0, n1, hr, dropout)
        eval_t = _eval_times(weeks, n_eval)
        fits = [kaplan_meier(weeks[arm == a], event[arm == a]) for a in (0, 1)]
        ok = True
        for _ev_t, surv, _gw in fits:
            # medians reached, and no KM step sitting exactly on 0.5 (median convention ambiguity)
            ok &= bool(np.any(surv < 0.5)) and bool(np.all(np.abs(surv - 0.5) > 1e-9))
        for a in (0, 1):
            ok &= bool(np.sum(weeks[arm == a] >= eval_t[-1]) >= 10)   # >= 10 at risk at the last time
        if ok:
            break
    else:
        raise RuntimeError("could not draw a valid trial")

    km = np.zeros((2, n_eval))
    se = np.zeros((2, n_eval))
    med = np.zeros(2)
    for a, (ev_t, surv, gw) in enumerate(fits):
        for j, t in enumerate(eval_t):
            km[a, j], se[a, j] = km_at(ev_t, surv, gw, t)
        med[a] = km_median(ev_t, surv)
    stat, pval = logrank(weeks, event, arm)
    beta, beta_se = cox_breslow(weeks, event, arm)

    output_dir = Path(output_dir)
    data_dir = output_dir / "data"
    ref_dir = output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    buf.write("patient_id,arm,time_weeks,event\n")
    for i in range(arm.size):
        buf.write(f"{i + 1},{arm[i]},{weeks[i]},{event[i]}\n")
    (data_dir / "survival.csv").write_text(buf.getvalue(), encoding="utf-8")
    analysis = {
        "arms": {"0": "control", "1": "treatment"},
        "time_unit": "weeks",
        "evaluation_times_weeks": eval_t,
        "event_coding": {"1": "event (death)", "0": "right-censored"},
    }
    (data_dir / "analysis.json").write_text(json.dumps(analysis, indent=2) + "\n", encoding="utf-8")

    np.save(ref_dir / "km_estimates_ref.npy", km)
    np.save(ref_dir / "km_standard_errors_ref.npy", se)
    np.save(ref_dir / "median_survival_ref.npy", med)
    np.save(ref_dir / "logrank_ref.npy", np.array([stat, pval]))
    np.save(ref_dir / "cox_model_ref.npy", np.array([beta, beta_se]))

    values = {
        "n_control": n0, "n_treatment": n1, "n_patients": n0 + n1, "n_eval": n_eval,
        "evaluation_times": ", ".join(str(t) for t in eval_t),
        "n_events": int(event.sum()), "n_censored": int((1 - event).sum()),
    }
    for level in ("b1", "b2", "b3", "b4"):
        tpl = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(_render(tpl, values), encoding="utf-8")

    meta = {
        "params_used": {"n_control": n0, "n_treatment": n1, "hazard_ratio": hr,
                        "dropout_rate": dropout, "n_eval": n_eval, "seed": seed},
        "input_files": ["data/survival.csv", "data/analysis.json"],
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
