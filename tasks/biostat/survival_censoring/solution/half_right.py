"""Half-right baseline: Kaplan-Meier, Greenwood SEs and medians are correct,
but the log-rank statistic uses the crude sum (O-E)^2/E over both arms and the
Cox model handles ties with Efron's approximation instead of Breslow's."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.stats import chi2
from solve import km_table, surv_at


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ws = ap.parse_args().workspace
    with open(ws / "data" / "survival.csv", newline="", encoding="utf-8") as fh:
        recs = list(csv.DictReader(fh))
    t = np.array([float(r["time_weeks"]) for r in recs])
    e = np.array([int(r["event"]) for r in recs])
    x = np.array([int(r["arm"]) for r in recs])
    times = json.loads((ws / "data" / "analysis.json").read_text(encoding="utf-8"))["evaluation_times_weeks"]
    km = np.zeros((2, len(times)))
    se = np.zeros((2, len(times)))
    med = np.zeros(2)
    for arm in (0, 1):
        rows = km_table(t[x == arm], e[x == arm])
        for j, when in enumerate(times):
            km[arm, j], se[arm, j] = surv_at(rows, when)
        med[arm] = next(tt for tt, ss, _ in rows if ss <= 0.5)

    o = np.zeros(2)
    ex = np.zeros(2)
    ev = np.unique(t[e == 1])
    for tt in ev:
        risk = t >= tt
        dead = (t == tt) & (e == 1)
        for arm in (0, 1):
            o[arm] += (dead & (x == arm)).sum()
            ex[arm] += dead.sum() * (risk & (x == arm)).sum() / risk.sum()
    stat = float(np.sum((o - ex) ** 2 / ex))

    def neg_efron(b: float) -> float:
        ll = 0.0
        for tt in ev:
            risk = t >= tt
            dead = (t == tt) & (e == 1)
            d = dead.sum()
            s0 = np.exp(b * x[risk]).sum()
            sd = np.exp(b * x[dead]).sum()
            ll += b * x[dead].sum() - sum(np.log(s0 - k / d * sd) for k in range(d))
        return -ll

    beta = minimize_scalar(neg_efron, bracket=(-1.0, 1.0), tol=1e-10).x
    h = 1e-4
    curv = (neg_efron(beta + h) - 2 * neg_efron(beta) + neg_efron(beta - h)) / h**2

    np.save(ws / "km_estimates.npy", km)
    np.save(ws / "km_standard_errors.npy", se)
    np.save(ws / "median_survival.npy", med)
    np.save(ws / "logrank.npy", np.array([stat, chi2.sf(stat, 1)]))
    np.save(ws / "cox_model.npy", np.array([beta, 1.0 / np.sqrt(curv)]))


if __name__ == "__main__":
    main()
