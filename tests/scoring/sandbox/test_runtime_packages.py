"""Both generation and scoring environments carry the scientific stack official tasks import, at the
versions requirements/base.txt pins: the bwrap runtime (the service's venv) and the scoring image
(docker backend, on the real engine `make test` starts). Each is used, not only imported, and a
custom scorer written for the official engine that reads figures with Pillow scores in both."""

import json
import re
import shutil
from pathlib import Path

import pytest
from PIL import Image

from scoring.pipeline import results_score_in_sandbox
from scoring.sandbox import Limits, SandboxBackend, get_backend, python_runtime_env
from tests.support import REPO

pytestmark = pytest.mark.slow

# Distribution names as pinned, and what a task imports.
STACK = {"numpy": "numpy", "scipy": "scipy", "pandas": "pandas", "matplotlib": "matplotlib", "pillow": "PIL",
         "PyYAML": "yaml"}
LATTICE = REPO / "tests" / "scoring" / "catalog" / "official_layouts" / "materials" / "lattice_figure"

EXERCISE = """
import io, json
from importlib import metadata
import numpy, scipy.linalg, pandas, yaml
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from PIL import Image
fig, ax = plt.subplots(figsize=(2, 2), dpi=40)
ax.plot(numpy.arange(5), numpy.arange(5) ** 2)
buffer = io.BytesIO()
fig.savefig(buffer, format="png")
buffer.seek(0)
used = {
    "png_size": list(Image.open(buffer).size),
    "eigen": float(scipy.linalg.eigvalsh(numpy.diag([1.0, 2.0])).sum()),
    "frame": int(pandas.DataFrame({"a": [1, 2, 3]})["a"].sum()),
    "yaml": yaml.safe_load(yaml.safe_dump({"k": [1, 2]})),
}
print(json.dumps({"versions": {name: metadata.version(name) for name in %s}, "used": used}))
"""


def pinned() -> dict[str, str]:
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", (REPO / "requirements" / "base.txt").read_text(), re.M))
    return {name: pins[name] for name in STACK}


@pytest.fixture(params=["bwrap", "docker"])
def backend(request) -> SandboxBackend:
    return get_backend(request.param)


def limits(backend: SandboxBackend) -> Limits:
    env = python_runtime_env() if backend.name == "bwrap" else {}
    return Limits(wall_clock_seconds=120, cpu_seconds=60, memory_bytes=1 << 30, max_processes=32,
                  max_file_bytes=8 << 20, env=env)


def test_the_runtime_has_the_pinned_scientific_stack_and_it_works(backend, tmp_path):
    workdir = tmp_path / "work"
    workdir.mkdir()
    code = EXERCISE % json.dumps(sorted(STACK))
    result = backend.run([*backend.python_command(), "-c", code], workdir, backend.runtime_mounts(), limits(backend))
    assert result.ok, result.stderr_text
    report = json.loads(result.stdout_text.strip().splitlines()[-1])
    assert report["versions"] == pinned()
    assert report["used"] == {"png_size": [80, 80], "eigen": 3.0, "frame": 6, "yaml": {"k": [1, 2]}}


def density_png(path: Path, shift: int = 0) -> Path:
    pixels = bytes((x * 8 + y * 4 + shift) % 256 for y in range(24) for x in range(32))
    Image.frombytes("L", (32, 24), pixels).save(path)
    return path


def test_a_custom_scorer_reading_figures_with_pillow_scores_in_the_runtime(backend, tmp_path):
    task_dir = tmp_path / "tasks" / "materials" / "lattice_figure"
    shutil.copytree(LATTICE, task_dir, ignore=shutil.ignore_patterns("__pycache__"))
    reference = tmp_path / "instance" / "reference"
    reference.mkdir(parents=True)
    density_png(reference / "density_ref.png")
    workdir = tmp_path / "work"
    (workdir / "exact").mkdir(parents=True)
    density_png(workdir / "exact" / "density.png")
    (workdir / "shifted").mkdir()
    density_png(workdir / "shifted" / "density.png", shift=32)
    (workdir / "garbage").mkdir()
    (workdir / "garbage" / "density.png").write_bytes(b"not a png")

    staged = {1: ("b1", workdir / "exact"), 2: ("b3", workdir / "shifted"), 3: ("b4", workdir / "garbage")}
    outcomes = results_score_in_sandbox(backend, task_dir, reference, {}, workdir, staged)
    assert {key: outcome["outcome"] for key, outcome in outcomes.items()} == {1: "scored", 2: "scored", 3: "scored"}
    assert outcomes[1]["percent"] == pytest.approx(100)
    assert 0 < outcomes[2]["percent"] < 100
    assert outcomes[3]["percent"] == 0 and "not an image" in outcomes[3]["reason"]
