"""Health-check fixture generator: numbers to add, their sum as the reference (and their count, which a
buggy scoring contract may point at instead)."""

import argparse
import json
import random
from pathlib import Path

import numpy as np

INPUT_SPEC = [{"name": "data/numbers.json"}]
OUTPUT_SPEC = [{"name": "total.npy"}]
DEFAULT_PARAMS = {"n": 5, "seed": 0}


def generate(output_dir: Path, params: dict) -> dict:
    p = {**DEFAULT_PARAMS, **params}
    rng = random.Random(p["seed"])
    numbers = [rng.randint(1000, 9999) for _ in range(p["n"])]
    (output_dir / "data").mkdir(parents=True, exist_ok=True)
    (output_dir / "reference").mkdir(parents=True, exist_ok=True)
    (output_dir / "data" / "numbers.json").write_text(json.dumps(numbers))
    np.save(output_dir / "reference" / "total_ref.npy", np.array([float(sum(numbers))]))
    np.save(output_dir / "reference" / "count_ref.npy", np.array([float(len(numbers))]))
    for level in ("b1", "b2", "b3", "b4"):
        (output_dir / f"prompt_{level}.md").write_text(f"Add the numbers in data/numbers.json ({level}).\n")
    (output_dir / "instance_meta.json").write_text(json.dumps({"params_used": p}, sort_keys=True))
    return {"params_used": p}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--params", default="{}")
    args = parser.parse_args()
    generate(Path(args.output_dir), json.loads(args.params))
