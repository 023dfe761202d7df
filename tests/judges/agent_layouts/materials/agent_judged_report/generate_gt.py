"""Generator of the agent judge fixture: a material, and the band gap its reference report gives."""

import argparse
import json
from pathlib import Path

INPUT_SPEC = [{"name": "data/material.txt"}]
OUTPUT_SPEC = [{"name": "report.md"}]
DEFAULT_PARAMS = {"gap": 1.1, "seed": 0}


def generate(output_dir: Path, params: dict) -> dict:
    p = {**DEFAULT_PARAMS, **params}
    gap = round(float(p["gap"]), 3)
    data, ref = output_dir / "data", output_dir / "reference"
    data.mkdir(parents=True, exist_ok=True)
    ref.mkdir(parents=True, exist_ok=True)
    (data / "material.txt").write_text(f"silicon-like crystal, seed {p['seed']}\n", encoding="utf-8")
    (ref / "report_ref.md").write_text(f"The band gap is {gap:.3f} eV (indirect).\n", encoding="utf-8")
    for level in ("b1", "b2", "b3", "b4"):
        template = (Path(__file__).parent / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(template, encoding="utf-8")
    used = {**p, "gap": gap}
    (output_dir / "instance_meta.json").write_text(json.dumps({"params_used": used}, sort_keys=True))
    return {"params_used": used}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--params", default="{}")
    args = parser.parse_args()
    generate(Path(args.output_dir), json.loads(args.params))
