"""Generator of the judge fixture: a Gaussian absorption peak, its report and its image."""

import argparse
import json
from pathlib import Path

import numpy as np
from PIL import Image

INPUT_SPEC = [{"name": "data/energies.npy"}]
OUTPUT_SPEC = [{"name": "spectrum.npy"}, {"name": "report.md"}, {"name": "spectrum.png"}]
DEFAULT_PARAMS = {"n_points": 60, "peak": 3.0, "seed": 0}


def spectrum_image(values: np.ndarray) -> Image.Image:
    """The curve drawn as white-on-black pixels, 48 px tall: deterministic, no fonts."""
    height, width = 48, len(values)
    pixels = np.zeros((height, width, 3), dtype=np.uint8)
    rows = np.clip(((1.0 - values / max(values.max(), 1e-12)) * (height - 1)).round().astype(int), 0, height - 1)
    for column, row in enumerate(rows):
        pixels[row:, column] = (40, 90, 200)
        pixels[row, column] = (255, 255, 255)
    return Image.fromarray(pixels)


def generate(output_dir: Path, params: dict) -> dict:
    p = {**DEFAULT_PARAMS, **params}
    rng = np.random.default_rng(int(p["seed"]))
    n, peak = int(p["n_points"]), round(float(p["peak"]), 6)
    width = round(float(rng.uniform(0.15, 0.4)), 6)
    energies = np.linspace(1.0, 5.0, n)
    spectrum = np.exp(-0.5 * ((energies - peak) / width) ** 2)
    data, ref = output_dir / "data", output_dir / "reference"
    data.mkdir(parents=True, exist_ok=True)
    ref.mkdir(parents=True, exist_ok=True)
    np.save(data / "energies.npy", energies)
    np.save(ref / "spectrum_ref.npy", spectrum)
    (ref / "report_ref.md").write_text(
        f"The absorption peak is at {peak:.3f} eV with a Gaussian width of {width:.3f} eV "
        "(instrumental broadening dominates).\n", encoding="utf-8")
    spectrum_image(spectrum).save(ref / "spectrum_ref.png", format="PNG")
    for level in ("b1", "b2", "b3", "b4"):
        template = (Path(__file__).parent / f"prompt_{level}.md").read_text(encoding="utf-8")
        (output_dir / f"prompt_{level}.md").write_text(template.replace("{{ n_points }}", str(n)), encoding="utf-8")
    used = {**p, "peak": peak}
    (output_dir / "instance_meta.json").write_text(json.dumps({"params_used": used}, sort_keys=True))
    return {"params_used": used}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--params", default="{}")
    args = parser.parse_args()
    generate(Path(args.output_dir), json.loads(args.params))
