"""Half-right baseline: correct path tracking, no singular endgame.

Uses the same homotopy tracker as solve.py, polishes regular endpoints and drops the
diverging ones, but treats the endpoints that run into a multiple root as ordinary
roots: they are reported one by one (unclustered, at the tracker's end point), every
multiplicity is 1 and no endpoint is counted as singular.
Usage: python solution/half_right.py --workspace W
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.dont_write_bytecode = True  # keep the task's solution/ directory free of caches
sys.path.insert(0, str(Path(__file__).resolve().parent))
from solve import HomogeneousSystem, Homotopy, newton_at_one  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", required=True, type=Path)
    ws = ap.parse_args().workspace
    system = json.loads((ws / "data" / "system.json").read_text(encoding="utf-8"))
    d1, d2 = (int(d) for d in system["degrees"])
    hom = Homotopy(HomogeneousSystem([eq["terms"] for eq in system["equations"]], [d1, d2]),
                   np.random.default_rng(7))
    roots, n_inf = [], 0
    for a in range(d1):
        for b in range(d2):
            z = np.array([1.0, np.exp(2j * np.pi * a / d1), np.exp(2j * np.pi * b / d2)])
            z, _ = hom.track(z / (hom.patch @ z), 1.0 - 1e-6)
            z_pol, ok = newton_at_one(hom, z)
            z = z_pol if ok else z
            if abs(z[0]) < 1e-6 * float(np.linalg.norm(z)):
                n_inf += 1
            else:
                roots.append(z[1:] / z[0])
    np.save(ws / "roots.npy", np.array(roots, dtype=np.complex128).reshape(-1, 2))
    np.save(ws / "multiplicities.npy", np.ones(len(roots), dtype=np.int64))
    np.save(ws / "path_counts.npy", np.array([d1 * d2, len(roots), 0, n_inf], dtype=np.int64))


if __name__ == "__main__":
    main()
