"""Reference solver (agent-style) for the counterpoise / CBS task.

Independent route: every species' total HF and correlation energy is first
extrapolated to the CBS limit (Karton-Martin for HF, Helgaker X^-3 for the
correlation energy, two largest basis sets) and the CBS interaction energy is
then formed from the CP-corrected species (dimer, monomers in the dimer basis).
Because both extrapolations are linear in the energies this equals
extrapolating the interaction energies themselves.

Usage: python solve.py --workspace W
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np


def km_cbs(e1: float, e2: float, x1: int, x2: int) -> float:
    """Karton-Martin: E(X) = E_inf + A (X+1) exp(-9 sqrt X), solved for E_inf."""
    g1 = (x1 + 1) * math.exp(-9 * math.sqrt(x1))
    g2 = (x2 + 1) * math.exp(-9 * math.sqrt(x2))
    a = (e1 - e2) / (g1 - g2)
    return e2 - a * g2


def helgaker_cbs(e1: float, e2: float, x1: int, x2: int) -> float:
    """E(X) = E_inf + B X^-3, solved for E_inf."""
    b = (e1 - e2) / (x1**-3 - x2**-3)
    return e2 - b * x2**-3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    info = json.loads((ws / "data" / "systems.json").read_text())
    conv = float(info["hartree_to_kcal_per_mol"])
    xs = sorted(b["cardinal_number"] for b in info["basis_sets"])
    n_sys = len(info["systems"])

    e = defaultdict(dict)  # (system, species) -> {X: (hf, corr)}
    with open(ws / "data" / "energies.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            e[(int(r["system"]), r["species"])][int(r["cardinal_number"])] = (
                float(r["E_HF_hartree"]),
                float(r["E_corr_hartree"]),
            )

    cp = np.zeros((n_sys, len(xs)))
    raw = np.zeros((n_sys, len(xs)))
    cbs = np.zeros((n_sys, 3))
    x1, x2 = xs[-2], xs[-1]
    for s in range(n_sys):
        for j, x in enumerate(xs):
            tot = {
                sp: sum(e[(s, sp)][x])
                for sp in ("dimer", "A_in_dimer_basis", "B_in_dimer_basis", "A_in_monomer_basis", "B_in_monomer_basis")
            }
            cp[s, j] = (tot["dimer"] - tot["A_in_dimer_basis"] - tot["B_in_dimer_basis"]) * conv
            raw[s, j] = (tot["dimer"] - tot["A_in_monomer_basis"] - tot["B_in_monomer_basis"]) * conv
        inf = {}
        for sp in ("dimer", "A_in_dimer_basis", "B_in_dimer_basis"):
            hf = km_cbs(e[(s, sp)][x1][0], e[(s, sp)][x2][0], x1, x2)
            corr = helgaker_cbs(e[(s, sp)][x1][1], e[(s, sp)][x2][1], x1, x2)
            inf[sp] = (hf, corr)
        d_hf = (inf["dimer"][0] - inf["A_in_dimer_basis"][0] - inf["B_in_dimer_basis"][0]) * conv
        d_corr = (inf["dimer"][1] - inf["A_in_dimer_basis"][1] - inf["B_in_dimer_basis"][1]) * conv
        cbs[s] = [d_hf, d_corr, d_hf + d_corr]

    np.save(ws / "cbs_interaction.npy", cbs)
    np.save(ws / "cp_interaction.npy", cp)
    np.save(ws / "raw_interaction.npy", raw)
    np.save(ws / "bsse.npy", cp - raw)


if __name__ == "__main__":
    main()
