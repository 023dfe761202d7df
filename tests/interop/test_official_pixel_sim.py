"""pixel_sim (SSIM and PSNR with Pillow and numpy) gives the official 0.2.0 engine's numbers, to the bit,
on the same images: colour, greyscale, with alpha, JPEG, identical, and of different sizes."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from scoring.engine.scorers.judges import MultimodalScorer

pytestmark = [pytest.mark.slow]

OFFICIAL = """
import json, sys
from pathlib import Path
from ai4sci_bench.scorers.multimodal import MultimodalScorer
pred, ref, cases = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
out = []
for config in cases:
    r = MultimodalScorer().score(pred, ref, dict(config))
    out.append({"score": r.score, "passed": bool(r.passed), "similarity": r.details.get("similarity"),
                "message": r.message})
print(json.dumps(out))
"""


def save(path: Path, pixels: np.ndarray, mode: str | None = None, fmt: str = "PNG") -> None:
    image = Image.fromarray(pixels.astype("uint8"))
    if mode:
        image = image.convert(mode)
    out = io.BytesIO()
    image.save(out, format=fmt, **({"quality": 85} if fmt == "JPEG" else {}))
    path.write_bytes(out.getvalue())


@pytest.fixture
def images(tmp_path: Path) -> tuple[Path, Path, list[dict]]:
    pred, ref = tmp_path / "pred", tmp_path / "ref"
    pred.mkdir()
    ref.mkdir()
    rng = np.random.RandomState(20)
    base = rng.randint(0, 256, (37, 53, 3))
    near = np.clip(base + rng.randint(-25, 26, base.shape), 0, 255)
    far = rng.randint(0, 256, base.shape)
    smooth = np.repeat(np.linspace(0, 255, 53)[None, :, None], 37, axis=0).repeat(3, axis=2)
    save(ref / "plot_ref.png", base)
    save(pred / "near.png", near)
    save(pred / "far.png", far)
    save(pred / "same.png", base)
    save(pred / "grey.png", near, mode="L")
    save(pred / "alpha.png", near, mode="RGBA")
    save(pred / "photo.jpg", smooth, fmt="JPEG")
    save(ref / "smooth_ref.png", smooth)
    save(pred / "small.png", base[:20, :20])
    cases = []
    for name, reference in (("near.png", "plot_ref.png"), ("far.png", "plot_ref.png"), ("same.png", "plot_ref.png"),
                            ("grey.png", "plot_ref.png"), ("alpha.png", "plot_ref.png"),
                            ("photo.jpg", "smooth_ref.png"), ("small.png", "plot_ref.png")):
        for metric in ("ssim", "psnr"):
            cases.append({"mode": "pixel_sim", "pixel_metric": metric, "pred_image": name, "ref_image": reference,
                          "weight": 10.0, "threshold": 0.5})
    cases.append({"mode": "pixel_sim", "pred_image": "missing.png", "ref_image": "plot_ref.png", "weight": 10.0})
    return pred, ref, cases


def test_pixel_sim_gives_the_official_numbers(official_client_with_scoring, images) -> None:
    pred, ref, cases = images
    python = Path(official_client_with_scoring).parent / "python"
    done = subprocess.run([str(python), "-c", OFFICIAL, str(pred), str(ref), json.dumps(cases)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    ours = []
    for config in cases:
        detail = MultimodalScorer().score(pred, ref, dict(config))
        ours.append({"score": detail.score, "passed": detail.passed, "similarity": detail.details.get("similarity"),
                     "message": detail.message})
    assert [(o["score"], o["passed"], o["similarity"]) for o in ours] == \
        [(t["score"], t["passed"], t["similarity"]) for t in theirs]
    assert [o["message"] for o in ours[:-1]] == [t["message"] for t in theirs[:-1]]
    scores = [o["score"] for o in ours]
    assert scores[4] == scores[5] == 10.0  # identical images: SSIM 1, PSNR 100 dB capped at 1
    assert 0 < scores[0] < 10 and abs(scores[2]) < 1 and scores[-3:] == [0.0, 0.0, 0.0]
