"""Half-right baseline: the two-compartment fit itself is correct, but the
half-lives are computed from the micro-constants (ln2/k10, ln2/k21) instead of
the disposition rate constants alpha and beta, and the AUC is a trapezoidal
AUC over the observed samples only (no extrapolation to infinity)."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np
from solve import central_conc, fit


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
        params.append(p)
        halves.append([np.log(2) / (cl / v1), np.log(2) / (q / v2)])
        aucs.append(np.trapezoid(np.concatenate([[0.0], y]), np.concatenate([[0.0], t])))
        preds.append(central_conc(p, t_pred, dose, t_inf))
    np.save(ws / "pk_parameters.npy", np.array(params, dtype=np.float64))
    np.save(ws / "half_lives.npy", np.array(halves, dtype=np.float64))
    np.save(ws / "auc.npy", np.array(aucs, dtype=np.float64))
    np.save(ws / "predicted_concentrations.npy", np.array(preds, dtype=np.float64))


if __name__ == "__main__":
    main()
