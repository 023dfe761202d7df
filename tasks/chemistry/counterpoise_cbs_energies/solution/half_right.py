"""Half-right baseline: counterpoise bookkeeping done correctly (per-basis CP and
uncorrected interaction energies, BSSE), but no basis-set extrapolation: the
largest-basis CP-corrected values are reported as the "CBS" result.

Usage: python half_right.py --workspace W
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

SPECIES = ("dimer", "A_in_dimer_basis", "B_in_dimer_basis", "A_in_monomer_basis", "B_in_monomer_basis")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", type=Path, required=True)
    ws = ap.parse_args().workspace
    info = json.loads((ws / "data" / "systems.json").read_text())
    conv = float(info["hartree_to_kcal_per_mol"])
    xs = sorted(b["cardinal_number"] for b in info["basis_sets"])
    n_sys = len(info["systems"])
    hf = np.zeros((n_sys, len(xs), len(SPECIES)))
    corr = np.zeros_like(hf)
    with open(ws / "data" / "energies.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            idx = (int(r["system"]), xs.index(int(r["cardinal_number"])), SPECIES.index(r["species"]))
            hf[idx] = float(r["E_HF_hartree"])
            corr[idx] = float(r["E_corr_hartree"])
    sign_cp = np.array([1.0, -1.0, -1.0, 0.0, 0.0])
    sign_raw = np.array([1.0, 0.0, 0.0, -1.0, -1.0])
    cp_hf, cp_corr = hf @ sign_cp * conv, corr @ sign_cp * conv
    raw = (hf + corr) @ sign_raw * conv
    cp = cp_hf + cp_corr
    cbs = np.stack([cp_hf[:, -1], cp_corr[:, -1], cp[:, -1]], axis=1)
    np.save(ws / "cbs_interaction.npy", cbs)
    np.save(ws / "cp_interaction.npy", cp)
    np.save(ws / "raw_interaction.npy", raw)
    np.save(ws / "bsse.npy", cp - raw)


if __name__ == "__main__":
    main()
