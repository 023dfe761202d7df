"""Reference solver: Kaplan-Meier/Greenwood, KM medians, log-rank test and a
Breslow-tie Cox model, written from the textbook formulas (Klein & Moeschberger
ch. 4, 7, 8)."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
from scipy.stats import chi2


def km_table(t: np.ndarray, e: np.ndarray) -> list[tuple[float, float, float]]:
    """[(event time, S(t), Greenwood variance of S(t))] in time order."""
    order = np.argsort(t, kind="stable")
    t, e = t[order], e[order]
    n_at_risk = len(t)
    s, g = 1.0, 0.0
    rows = []
    i = 0
    while i < len(t):
        j = i
        while j < len(t) and t[j] == t[i]:
            j += 1
        d = int(e[i:j].sum())
        if d:
            s *= (n_at_risk - d) / n_at_risk
            g += d / (n_at_risk * (n_at_risk - d)) if n_at_risk > d else float("inf")
            rows.append((float(t[i]), s, s * s * g))
        n_at_risk -= j - i          # events and censorings at t leave after t
        i = j
    return rows


def surv_at(rows: list[tuple[float, float, float]], when: float) -> tuple[float, float]:
    s, v = 1.0, 0.0
    for tt, ss, vv in rows:
        if tt <= when:
            s, v = ss, vv
        else:
            break
    return s, float(np.sqrt(v))


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

    # log-rank (Mantel-Haenszel / hypergeometric variance), treatment arm as reference group
    obs = exp_ = var = 0.0
    for tt in np.unique(t[e == 1]):
        risk = t >= tt
        n, n1 = risk.sum(), (risk & (x == 1)).sum()
        dead = (t == tt) & (e == 1)
        d, d1 = dead.sum(), (dead & (x == 1)).sum()
        obs += d1
        exp_ += d * n1 / n
        if n > 1:
            var += d * n1 * (n - n1) * (n - d) / (n * n * (n - 1))
    stat = (obs - exp_) ** 2 / var

    # Cox partial likelihood, Breslow ties, Newton-Raphson
    ev = np.unique(t[e == 1])
    beta = 0.0
    for _ in range(100):
        u = info = 0.0
        for tt in ev:
            risk = t >= tt
            r = np.exp(beta * x[risk])
            s0, s1 = r.sum(), (r * x[risk]).sum()
            dead = (t == tt) & (e == 1)
            u += x[dead].sum() - dead.sum() * s1 / s0
            info += dead.sum() * (s1 / s0 - (s1 / s0) ** 2)   # x is 0/1, so sum x^2 r = s1
        step = u / info
        beta += step
        if abs(step) < 1e-13:
            break
    info = 0.0
    for tt in ev:
        risk = t >= tt
        r = np.exp(beta * x[risk])
        m = (r * x[risk]).sum() / r.sum()
        info += ((t == tt) & (e == 1)).sum() * (m - m * m)

    np.save(ws / "km_estimates.npy", km)
    np.save(ws / "km_standard_errors.npy", se)
    np.save(ws / "median_survival.npy", med)
    np.save(ws / "logrank.npy", np.array([stat, chi2.sf(stat, 1)]))
    np.save(ws / "cox_model.npy", np.array([beta, 1.0 / np.sqrt(info)]))


if __name__ == "__main__":
    main()
