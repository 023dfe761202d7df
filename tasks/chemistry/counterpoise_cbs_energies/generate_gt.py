"""Instance generator for chemistry.counterpoise_cbs_energies.

Synthesises a table of Hartree-Fock and correlation energies for several
non-covalent dimers (S22-like systems) in the aug-cc-pVXZ series, for the five
Boys-Bernardi counterpoise calculations per basis: dimer in the dimer basis,
each monomer in the dimer basis (ghost partner) and each monomer in its own basis.

Hidden truth per dimer: CBS-limit HF and correlation interaction energies.
The counterpoise-corrected interaction energies follow exactly
    HF:   dE(X) = dE_CBS + a (X+1) exp(-9 sqrt(X))      (Karton & Martin 2006)
    corr: dE(X) = dE_CBS + b X^-3                       (Helgaker et al. 1997)
for X >= 3, while the double-zeta values deviate from these forms (DZ is outside
the asymptotic regime).  BSSE is positive and decays with X.  The references
are recomputed from the energies exactly as written to the data file, so the
extrapolated CBS interaction energies are exact up to float64 round-off.

CLI: python generate_gt.py --output-dir DIR --params JSON
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import numpy as np

HARTREE_TO_KCAL = 627.509474  # kcal/mol per hartree

INPUT_SPEC = [
    {"name": "energies.csv", "type": "data", "description": "HF and correlation energies per calculation"},
    {"name": "systems.json", "type": "json", "description": "dimer list, basis sets, unit conversion"},
]
OUTPUT_SPEC = [
    {"name": "cbs_interaction.npy", "type": "data"},
    {"name": "cp_interaction.npy", "type": "data"},
    {"name": "raw_interaction.npy", "type": "data"},
    {"name": "bsse.npy", "type": "data"},
]
DEFAULT_PARAMS = {"n_systems": 5, "max_cardinal": 4, "seed": 0}

TASK_DIR = Path(__file__).resolve().parent
BASIS_LETTER = {2: "D", 3: "T", 4: "Q", 5: "5"}

# monomer: (HF/CBS energy, CCSD(T) valence correlation energy at CBS), hartree
MONOMERS = {
    "water": (-76.0675, -0.3000),
    "ammonia": (-56.2250, -0.2750),
    "methane": (-40.2170, -0.2350),
    "hydrogen fluoride": (-100.0710, -0.3150),
    "formic acid": (-188.8450, -0.6700),
    "ethene": (-78.0680, -0.3800),
    "ethyne": (-76.8550, -0.3550),
    "benzene": (-230.7820, -1.0200),
    "hydrogen cyanide": (-92.9150, -0.4050),
    "formamide": (-168.9900, -0.6350),
}
# dimer: (monomer A, monomer B, total CBS interaction, HF part), kcal/mol (S22/S66-like magnitudes)
DIMERS = [
    ("water dimer", "water", "water", -5.02, -3.70),
    ("ammonia dimer", "ammonia", "ammonia", -3.17, -1.60),
    ("hydrogen fluoride dimer", "hydrogen fluoride", "hydrogen fluoride", -4.57, -3.70),
    ("formic acid dimer", "formic acid", "formic acid", -18.61, -13.90),
    ("water-ammonia", "water", "ammonia", -6.41, -4.60),
    ("methane dimer", "methane", "methane", -0.53, 0.40),
    ("ethene dimer", "ethene", "ethene", -1.48, 1.10),
    ("ethene-ethyne", "ethene", "ethyne", -1.50, -0.25),
    ("benzene-water", "benzene", "water", -3.28, -1.20),
    ("benzene-methane", "benzene", "methane", -1.45, 0.85),
    ("hydrogen cyanide dimer", "hydrogen cyanide", "hydrogen cyanide", -4.74, -3.80),
    ("formamide dimer", "formamide", "formamide", -16.06, -11.70),
]
SPECIES = ("dimer", "A_in_dimer_basis", "B_in_dimer_basis", "A_in_monomer_basis", "B_in_monomer_basis")


def km_shape(x: int) -> float:
    """Karton-Martin HF basis-set incompleteness shape (X+1) exp(-9 sqrt(X))."""
    return (x + 1) * math.exp(-9.0 * math.sqrt(x))


def incompleteness(x: int, tz_and_dz_ratio: tuple[float, float], kind: str) -> float:
    """E(X) - E(CBS): exact model form for X >= 3, scaled from the TZ value; DZ off-model."""
    tz, dz_ratio = tz_and_dz_ratio
    if x == 2:
        return tz * dz_ratio
    if kind == "hf":
        return tz * km_shape(x) / km_shape(3)
    return tz * (3.0 / x) ** 3


def two_point_cbs(e_lo: np.ndarray, e_hi: np.ndarray, x_lo: int, x_hi: int, kind: str) -> np.ndarray:
    """Two-point CBS limit; kind 'hf' (Karton-Martin) or 'corr' (Helgaker X^-3)."""
    if kind == "hf":
        f_lo, f_hi = km_shape(x_lo), km_shape(x_hi)
    else:
        f_lo, f_hi = float(x_lo) ** -3, float(x_hi) ** -3
    return (e_hi * f_lo - e_lo * f_hi) / (f_lo - f_hi)


def _render(text: str, values: dict) -> str:
    def repl(match: re.Match) -> str:
        return str(values[match.group(1)])

    return re.sub(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}", repl, text)


def _merge(params: dict | None) -> dict:
    p = dict(DEFAULT_PARAMS)
    p.update(params or {})
    p["n_systems"] = int(p["n_systems"])
    p["max_cardinal"] = int(p["max_cardinal"])
    p["seed"] = int(p["seed"])
    if not 2 <= p["n_systems"] <= len(DIMERS):
        raise ValueError("n_systems out of range")
    if p["max_cardinal"] not in (4, 5):
        raise ValueError("max_cardinal must be 4 or 5")
    return p


def _fmt(x: float) -> str:
    return f"{x:.10f}"


def generate(output_dir: Path, params: dict) -> dict:
    p = _merge(params)
    rng = np.random.default_rng(p["seed"])
    output_dir = Path(output_dir)
    data_dir = output_dir / "data"
    ref_dir = output_dir / "reference"
    data_dir.mkdir(parents=True, exist_ok=True)
    ref_dir.mkdir(parents=True, exist_ok=True)

    cards = list(range(2, p["max_cardinal"] + 1))
    picks = sorted(rng.choice(len(DIMERS), size=p["n_systems"], replace=False).tolist())
    kcal = HARTREE_TO_KCAL

    rows = []  # (system index, X, species, E_HF, E_corr) with values already rounded
    systems = []
    for s_idx, d_idx in enumerate(picks):
        name, mon_a, mon_b, tot_cbs, hf_cbs = DIMERS[d_idx]
        tot_cbs *= 1.0 + 0.03 * rng.standard_normal()
        hf_cbs *= 1.0 + 0.05 * rng.standard_normal()
        corr_cbs = tot_cbs - hf_cbs
        systems.append({"index": s_idx, "name": name, "monomer_A": mon_a, "monomer_B": mon_b})

        # CP-corrected interaction-energy incompleteness at TZ (kcal/mol, underbinding in small
        # bases) and the DZ/TZ ratio (DZ is not in the asymptotic regime of either formula)
        int_hf = (rng.uniform(0.01, 0.06), rng.uniform(3.0, 8.0))
        int_corr = (rng.uniform(0.08, 0.20) * abs(corr_cbs) + rng.uniform(0.03, 0.08), rng.uniform(2.0, 3.0))

        frag = {}
        for tag, mon in (("A", mon_a), ("B", mon_b)):
            e_hf, e_corr = MONOMERS[mon]
            size = abs(e_corr) / 0.3
            e_hf += 0.002 * size * rng.standard_normal()  # monomer geometry inside the dimer
            e_corr *= 1.0 + 0.01 * rng.standard_normal()
            frag[tag] = {
                "hf_cbs": e_hf,
                "corr_cbs": e_corr,
                "hf_tz": (rng.uniform(2.0, 6.0) * 1e-3 * size, rng.uniform(3.0, 5.0)),  # hartree
                "corr_tz": (rng.uniform(0.02, 0.03) * size, rng.uniform(2.5, 3.5)),  # hartree
                "bsse_hf": rng.uniform(0.03, 0.25) * size,  # kcal/mol at DZ
                "bsse_corr": rng.uniform(0.15, 0.6) * size,  # kcal/mol at DZ
            }

        for x in cards:
            energies = {}
            sum_hf_ab = 0.0
            sum_corr_ab = 0.0
            for tag in ("A", "B"):
                f = frag[tag]
                hf_ab = f["hf_cbs"] + incompleteness(x, f["hf_tz"], "hf")
                corr_ab = f["corr_cbs"] + incompleteness(x, f["corr_tz"], "corr")
                bsse_hf = f["bsse_hf"] * math.exp(-1.3 * (x - 2)) / kcal
                bsse_corr = f["bsse_corr"] * (2.0 / x) ** 2.5 / kcal
                energies[f"{tag}_in_dimer_basis"] = (hf_ab, corr_ab)
                energies[f"{tag}_in_monomer_basis"] = (hf_ab + bsse_hf, corr_ab + bsse_corr)
                sum_hf_ab += hf_ab
                sum_corr_ab += corr_ab
            d_hf = hf_cbs + incompleteness(x, int_hf, "hf")
            d_corr = corr_cbs + incompleteness(x, int_corr, "corr")
            energies["dimer"] = (sum_hf_ab + d_hf / kcal, sum_corr_ab + d_corr / kcal)
            for sp in SPECIES:
                hf_v, corr_v = energies[sp]
                rows.append((s_idx, x, sp, float(_fmt(hf_v)), float(_fmt(corr_v))))

    # shuffle the table rows so the agent has to index by labels
    order = rng.permutation(len(rows))
    lines = ["system,system_name,cardinal_number,basis,species,E_HF_hartree,E_corr_hartree"]
    for i in order:
        s_idx, x, sp, hf_v, corr_v = rows[i]
        lines.append(
            f"{s_idx},{systems[s_idx]['name']},{x},aug-cc-pV{BASIS_LETTER[x]}Z,{sp},{_fmt(hf_v)},{_fmt(corr_v)}"
        )
    (data_dir / "energies.csv").write_text("\n".join(lines) + "\n")
    info = {
        "systems": systems,
        "basis_sets": [{"cardinal_number": x, "name": f"aug-cc-pV{BASIS_LETTER[x]}Z"} for x in cards],
        "hartree_to_kcal_per_mol": HARTREE_TO_KCAL,
        "method": "CCSD(T) valence correlation on top of Hartree-Fock; monomers at their dimer geometries",
    }
    (data_dir / "systems.json").write_text(json.dumps(info, indent=2) + "\n")

    # references from the energies exactly as written
    n_s, n_b = p["n_systems"], len(cards)
    tab = {(s, x, sp): (hf_v, corr_v) for s, x, sp, hf_v, corr_v in rows}
    cp = np.zeros((n_s, n_b, 2))  # HF, corr
    raw = np.zeros((n_s, n_b, 2))
    for s in range(n_s):
        for j, x in enumerate(cards):
            for c in range(2):
                e = {sp: tab[(s, x, sp)][c] for sp in SPECIES}
                cp[s, j, c] = (e["dimer"] - e["A_in_dimer_basis"] - e["B_in_dimer_basis"]) * kcal
                raw[s, j, c] = (e["dimer"] - e["A_in_monomer_basis"] - e["B_in_monomer_basis"]) * kcal
    x_lo, x_hi = cards[-2], cards[-1]
    hf_inf = two_point_cbs(cp[:, -2, 0], cp[:, -1, 0], x_lo, x_hi, "hf")
    corr_inf = two_point_cbs(cp[:, -2, 1], cp[:, -1, 1], x_lo, x_hi, "corr")
    cbs = np.stack([hf_inf, corr_inf, hf_inf + corr_inf], axis=1)
    cp_tot = cp.sum(axis=2)
    raw_tot = raw.sum(axis=2)
    bsse = cp_tot - raw_tot

    np.save(ref_dir / "cbs_interaction_ref.npy", cbs)
    np.save(ref_dir / "cp_interaction_ref.npy", cp_tot)
    np.save(ref_dir / "raw_interaction_ref.npy", raw_tot)
    np.save(ref_dir / "bsse_ref.npy", bsse)

    values = {
        "n_systems": n_s,
        "n_basis": n_b,
        "basis_list": ", ".join(f"aug-cc-pV{BASIS_LETTER[x]}Z" for x in cards),
        "x_lo": x_lo,
        "x_hi": x_hi,
    }
    for level in ("b1", "b2", "b3", "b4"):
        template = (TASK_DIR / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(_render(template, values), encoding="utf-8")

    meta = {
        "params_used": p,
        "input_files": [f"data/{s['name']}" for s in INPUT_SPEC],
        "reference_files": [f"{s['name'][:-4]}_ref.npy" for s in OUTPUT_SPEC],
    }
    (output_dir / "instance_meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--output-dir", required=True, type=Path)
    parser.add_argument("--params", default="{}")
    args = parser.parse_args()
    generate(args.output_dir, json.loads(args.params))


if __name__ == "__main__":
    main()
