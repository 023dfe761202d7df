"""Reference solver: vectorised Gillespie direct method over many trajectories.

Reads <workspace>/data/config.json and writes product_moments.npy,
product_distribution.npy and completion_time.npy into the workspace.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def simulate(cfg: dict, n_traj: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Return (P at each requested time, completion time) for n_traj trajectories."""
    k1 = cfg["rate_constants"]["k1"]
    km1 = cfg["rate_constants"]["k_minus1"]
    k2 = cfg["rate_constants"]["k2"]
    init = cfg["initial_counts"]
    obs = np.array(list(cfg["observation_times"]) + [cfg["histogram_time"]], dtype=float)

    e = np.full(n_traj, init["E"], dtype=np.int64)
    s = np.full(n_traj, init["S"], dtype=np.int64)
    c = np.full(n_traj, init["C"], dtype=np.int64)
    p = np.full(n_traj, init["P"], dtype=np.int64)
    total = init["S"] + init["C"] + init["P"]
    t = np.zeros(n_traj)
    recorded = np.full((n_traj, obs.size), -1, dtype=np.int64)
    t_done = np.full(n_traj, np.nan)
    idx = np.arange(n_traj)

    while idx.size:
        a1 = k1 * e[idx] * s[idx]
        a2 = km1 * c[idx]
        a3 = k2 * c[idx]
        a0 = a1 + a2 + a3
        t_next = t[idx] - np.log(rng.random(idx.size)) / a0
        # the state holds on [t, t_next): it is the state seen at any obs time in there
        hit = (recorded[idx] < 0) & (obs[None, :] < t_next[:, None])
        rows, cols = np.nonzero(hit)
        recorded[idx[rows], cols] = p[idx[rows]]
        u = rng.random(idx.size) * a0
        r1 = u < a1
        r2 = ~r1 & (u < a1 + a2)
        r3 = ~r1 & ~r2
        i1, i2, i3 = idx[r1], idx[r2], idx[r3]
        e[i1] -= 1; s[i1] -= 1; c[i1] += 1  # noqa: E702
        e[i2] += 1; s[i2] += 1; c[i2] -= 1  # noqa: E702
        e[i3] += 1; c[i3] -= 1; p[i3] += 1  # noqa: E702
        t[idx] = t_next
        done = p[idx] == total
        fin = idx[done]
        t_done[fin] = t[fin]
        # absorbed: product stays at its final value for all later observation times
        late = recorded[fin] < 0
        recorded[fin] = np.where(late, total, recorded[fin])
        idx = idx[~done]
    return recorded, t_done


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ap.add_argument("--seed", type=int, default=20260101)
    args = ap.parse_args()
    ws = args.workspace
    cfg = json.loads((ws / "data" / "config.json").read_text(encoding="utf-8"))
    n_traj = int(cfg["n_trajectories"])
    rng = np.random.default_rng(args.seed)
    rec, t_done = simulate(cfg, n_traj, rng)

    n_obs = len(cfg["observation_times"])
    pvals = rec[:, :n_obs].astype(float)
    moments = np.stack([pvals.mean(axis=0), pvals.var(axis=0, ddof=1)], axis=1)
    s_total = cfg["initial_counts"]["S"] + cfg["initial_counts"]["C"] + cfg["initial_counts"]["P"]
    hist = np.bincount(rec[:, n_obs], minlength=s_total + 1).astype(float) / n_traj
    completion = np.array([t_done.mean(), t_done.std(ddof=1)])

    np.save(ws / "product_moments.npy", moments.astype(np.float64))
    np.save(ws / "product_distribution.npy", hist.astype(np.float64))
    np.save(ws / "completion_time.npy", completion.astype(np.float64))


if __name__ == "__main__":
    main()
