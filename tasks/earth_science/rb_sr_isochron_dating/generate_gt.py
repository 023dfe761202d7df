"""Instance generator for earth_science.rb_sr_isochron_dating.

Rb-Sr isochrons of several rock suites: each suite is a set of mineral / whole-rock
analyses of 87Rb/86Sr (X) and 87Sr/86Sr (Y) with per-point 1-sigma errors in both
ratios and an X-Y error correlation.  Synthetic analyses are drawn about a true isochron
with correlated bivariate normal errors (plus a per-suite excess-scatter factor).  The
reference is the best-fit straight line with errors in both coordinates (York et al.
2004, Am. J. Phys. 72, 367), iterated to a fixed point at machine precision, with
York's analytical standard errors and the MSWD.

CLI: python generate_gt.py --output-dir DIR --params JSON
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

TASK_DIR = Path(__file__).resolve().parent
LAMBDA_RB87 = 1.3972e-11  # 1/a, Villa et al. (2015) GCA 164, 382

INPUT_SPEC = [
    {"name": "analyses.csv", "type": "data", "description": "suite, X, sigma_X, Y, sigma_Y, rho per analysis"},
    {"name": "constants.json", "type": "json", "description": "87Rb decay constant and suite names"},
]
OUTPUT_SPEC = [
    {"name": "age_ma.npy", "type": "data"},
    {"name": "initial_ratio.npy", "type": "data"},
    {"name": "age_sigma_ma.npy", "type": "data"},
    {"name": "mswd.npy", "type": "data"},
]
DEFAULT_PARAMS = {"n_suites": 4, "min_points": 6, "max_points": 12, "seed": 0}


def _merge(params: dict | None) -> dict:
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    for key in ("n_suites", "min_points", "max_points", "seed"):
        p[key] = int(p[key])
    if p["n_suites"] < 1 or p["min_points"] < 4 or p["max_points"] < p["min_points"]:
        raise ValueError("need n_suites >= 1 and 4 <= min_points <= max_points")
    return p


def york_fit(x, sx, y, sy, r, tol: float = 1e-15, max_iter: int = 10000) -> dict:
    """York et al. (2004) best straight line with correlated errors in x and y."""
    wx, wy = 1.0 / sx**2, 1.0 / sy**2
    alpha = np.sqrt(wx * wy)
    b = np.polyfit(x, y, 1)[0]
    for _ in range(max_iter):
        w = wx * wy / (wx + b * b * wy - 2.0 * b * r * alpha)
        xbar, ybar = np.sum(w * x) / np.sum(w), np.sum(w * y) / np.sum(w)
        u, v = x - xbar, y - ybar
        beta = w * (u / wy + b * v / wx - (b * u + v) * r / alpha)
        b_new = np.sum(w * beta * v) / np.sum(w * beta * u)
        done = abs(b_new - b) <= tol * abs(b_new)
        b = b_new
        if done:
            break
    else:
        raise RuntimeError("York iteration did not converge")
    w = wx * wy / (wx + b * b * wy - 2.0 * b * r * alpha)
    xbar, ybar = np.sum(w * x) / np.sum(w), np.sum(w * y) / np.sum(w)
    u, v = x - xbar, y - ybar
    beta = w * (u / wy + b * v / wx - (b * u + v) * r / alpha)
    a = ybar - b * xbar
    xadj = xbar + beta
    xadj_bar = np.sum(w * xadj) / np.sum(w)
    sigma_b = np.sqrt(1.0 / np.sum(w * (xadj - xadj_bar) ** 2))
    sigma_a = np.sqrt(1.0 / np.sum(w) + xadj_bar**2 * sigma_b**2)
    mswd = float(np.sum(w * (y - b * x - a) ** 2) / (len(x) - 2))
    return {"slope": b, "intercept": a, "sigma_slope": sigma_b, "sigma_intercept": sigma_a, "mswd": mswd}


def _sig(value: float, digits: int) -> str:
    return f"{value:.{digits}g}"


def generate(output_dir: Path, params: dict) -> dict:
    p = _merge(params)
    rng = np.random.default_rng(p["seed"])
    output_dir = Path(output_dir)
    data_dir = output_dir / "data"
    ref_dir = output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)

    rows = ["suite,X_rb87_sr86,sigma_X,Y_sr87_sr86,sigma_Y,rho_XY"]
    names, ages, initials, age_sigmas, mswds = [], [], [], [], []
    for s in range(p["n_suites"]):
        name = f"S{s + 1:02d}"
        n = int(rng.integers(p["min_points"], p["max_points"] + 1))
        age_true = rng.uniform(80.0, 3200.0) * 1e6
        r0 = rng.uniform(0.7020, 0.7150)
        slope_true = np.expm1(LAMBDA_RB87 * age_true)
        x_true = np.sort(np.exp(rng.uniform(np.log(0.05), np.log(rng.uniform(3.0, 40.0)), n)))
        y_true = r0 + slope_true * x_true
        # analytical precision varies from point to point by an order of magnitude
        rel_x = np.exp(rng.uniform(np.log(0.002), np.log(0.02), n))
        rel_y = np.exp(rng.uniform(np.log(0.00001), np.log(0.0002), n))
        rho = rng.uniform(0.0, 0.9, n)
        excess = rng.uniform(1.0, 1.8)
        sx, sy = rel_x * x_true, rel_y * y_true
        z1, z2 = rng.standard_normal(n), rng.standard_normal(n)
        x_obs = x_true + excess * sx * z1
        y_obs = y_true + excess * sy * (rho * z1 + np.sqrt(1.0 - rho**2) * z2)
        # the file carries rounded values; the reference is fitted to exactly those values
        cols = []
        for i in range(n):
            vals = (_sig(x_obs[i], 8), _sig(sx[i], 4), _sig(y_obs[i], 10), _sig(sy[i], 4), _sig(rho[i], 3))
            rows.append(",".join((name, *vals)))
            cols.append([float(v) for v in vals])
        arr = np.array(cols)
        fit = york_fit(arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3], arr[:, 4])
        names.append(name)
        ages.append(np.log1p(fit["slope"]) / LAMBDA_RB87 / 1e6)
        initials.append(fit["intercept"])
        age_sigmas.append(fit["sigma_slope"] / ((1.0 + fit["slope"]) * LAMBDA_RB87) / 1e6)
        mswds.append(fit["mswd"])

    (data_dir / "analyses.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    constants = {"lambda_rb87_per_year": LAMBDA_RB87, "suites": names,
                 "uncertainties": "1-sigma absolute; rho_XY is the correlation of the X and Y errors"}
    (data_dir / "constants.json").write_text(json.dumps(constants, indent=2, sort_keys=True) + "\n")
    np.save(ref_dir / "age_ma_ref.npy", np.array(ages, dtype=np.float64))
    np.save(ref_dir / "initial_ratio_ref.npy", np.array(initials, dtype=np.float64))
    np.save(ref_dir / "age_sigma_ma_ref.npy", np.array(age_sigmas, dtype=np.float64))
    np.save(ref_dir / "mswd_ref.npy", np.array(mswds, dtype=np.float64))

    values = {"n_suites": p["n_suites"], "lambda": f"{LAMBDA_RB87:g}"}
    for level in ("b1", "b2", "b3", "b4"):
        template = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(_render(template, values), encoding="utf-8")

    meta = {
        "params_used": p,
        "input_files": [s["name"] for s in INPUT_SPEC],
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
