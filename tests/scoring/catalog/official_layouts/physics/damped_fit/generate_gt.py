"""Fixture generator in the official style: argparse entry, a plot, a rendered prompt, timings (in
instance_meta.json and nested in a reference JSON)."""

import argparse
import json
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

DEFAULT_PARAMS = {"n_points": 40, "damping": 0.1, "seed": 0}


def generate(output_dir: Path, params: dict) -> dict:
    start = time.perf_counter()
    p = {**DEFAULT_PARAMS, **params}
    rng = np.random.default_rng(int(p["seed"]))
    n = int(p["n_points"])
    damping = float(p["damping"])
    frequency = round(float(rng.uniform(0.5, 2.0)), 6)
    t = np.linspace(0.0, 10.0, n)
    clean = np.exp(-damping * t) * np.cos(2 * np.pi * frequency * t)
    noisy = clean + rng.normal(0.0, 0.02, n)

    data, ref = output_dir / "data", output_dir / "reference"
    data.mkdir(parents=True, exist_ok=True)
    ref.mkdir(parents=True, exist_ok=True)
    rows = "\n".join(f"{a:.8f},{b:.8f}" for a, b in zip(t, noisy, strict=True))
    (data / "signal.csv").write_text("t,y\n" + rows + "\n", encoding="utf-8")
    fig, ax = plt.subplots(figsize=(4, 3), dpi=50)
    ax.plot(t, noisy, ".")
    fig.savefig(data / "preview.png", metadata={"Software": None})
    plt.close(fig)
    np.save(ref / "curve_ref.npy", clean)
    (ref / "params_ref.csv").write_text(f"name,value\ndamping,{damping}\nfrequency,{frequency}\n", encoding="utf-8")
    # As official generators do, a diagnostics file beside the references records its own timing.
    diagnostics = {"samples": n, "solver": {"noise_sigma": 0.02, "generation_seconds": time.perf_counter() - start}}
    (ref / "fit_diagnostics.json").write_text(json.dumps(diagnostics, indent=2), encoding="utf-8")

    template = (Path(__file__).parent / "prompt_b1.md").read_text(encoding="utf-8")
    (output_dir / "prompt_b1.md").write_text(template.replace("{{ n_points }}", str(n)), encoding="utf-8")
    meta = {
        "params_used": p,
        "input_files": ["data/signal.csv", "data/preview.png"],
        "reference_files": ["reference/curve_ref.npy", "reference/params_ref.csv", "reference/fit_diagnostics.json"],
        # What official generators record, and what differs on every run.
        "generation_time_seconds": time.perf_counter() - start,
    }
    (output_dir / "instance_meta.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
    return meta


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", type=Path, required=True)
    parser.add_argument("--params", type=str, default="{}")
    args = parser.parse_args()
    generate(args.output_dir, json.loads(args.params))
