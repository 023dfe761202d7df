"""The judge fixture task (tests/judges/layouts, official split layout) in the catalog, and results for it
whose judged files carry the local endpoint's script markers (tests/judge_endpoint.py)."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from tests.judge_endpoint import JudgeEndpoint
from tests.results_tree import write_result
from tests.support import extract_instances

LAYOUTS = Path(__file__).parent / "layouts"
TASK = "materials.judged_spectrum"
INSTANCE = f"{TASK}__seed42"  # runs are submitted on seed42 only
PUBLIC_NAME = f"{TASK}__seed31415"  # the same instance as the official client's local scoring takes it
KEY_ENV, SECRET = "JUDGE_TEST_KEY", "sk-judge-secret-4d2c81"
# What each level's outputs make the endpoint answer: the report (llm_judge and the custom scorer's own
# litellm call), the figure (vlm_judge), and how far the spectrum is off.
LEVELS: dict[str, dict[str, Any]] = {
    "b1": {"report": "seq:8,9,7", "figure": "fenced:9", "scale": 1.0, "noise": False},
    "b2": {"report": "prose:6", "figure": "text:7", "scale": 1.05, "noise": True},
    "b3": {"report": "malformed", "figure": "429:5", "scale": 0.7, "noise": True},
    "b4": {"report": "well:4", "figure": "seq:3,4,10", "scale": -1.0, "noise": False, "long": True},
}


def endpoint_env(endpoint: JudgeEndpoint) -> dict[str, str]:
    """The official operator settings, pointing at the local endpoint."""
    return {"ASIBENCH_JUDGE_API_BASE": endpoint.url + "/v1", "ASIBENCH_JUDGE_API_KEY_ENV": KEY_ENV,
            "ASIBENCH_JUDGE_API_PROTOCOL": "openai", KEY_ENV: SECRET}


@pytest.fixture(scope="module")
def judged_catalog(django_db_setup: None, django_db_blocker: object, tmp_path_factory) -> Iterator[dict[str, Any]]:
    """The fixture task loaded (generated in the sandbox) and committed. Its seed42 instance (inputs and
    private reference) is unpacked under the seed31415 name too, so the official client's local scoring
    can score the very files the Portal scores."""
    from scoring.models import Dataset, Instance, Task
    from scoring.task_loading import catalog_load
    from scoring.task_storage import reference_extract

    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        report = catalog_load(tasks_root=LAYOUTS)
        assert not report.failures, report.failures
        base = tmp_path_factory.mktemp("judged-instances")
        instance = Instance.objects.get(instance_id=INSTANCE)
        instances = extract_instances("seed42", (TASK,), base / "public")
        reference = reference_extract(instance, base / "private")
        relabelled = base / "official" / PUBLIC_NAME
        shutil.copytree(instances / INSTANCE, relabelled)
        shutil.copytree(reference, relabelled / "reference")
        rows = [list(Dataset.objects.all()), list(Task.objects.all()), list(Instance.objects.all())]
        yield {"instances": instances, "reference": reference, "official_instances": relabelled.parent,
               "params": instance.params, "rows": rows}
        from portal.submissions.models import Submission

        Submission.objects.all().delete()
        Task.objects.all().delete()
        Dataset.objects.all().delete()


def restore_catalog(rows: list[list[Any]], instance_id: str = INSTANCE) -> None:
    """Put the catalog rows back after a transactional test flushed them (their files stay in storage)."""
    from scoring.models import Instance

    if not Instance.objects.filter(instance_id=instance_id).exists():
        for model_rows in rows:
            type(model_rows[0]).objects.bulk_create(model_rows)


def npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def marked_png(pixels: np.ndarray, behaviour: str) -> bytes:
    info = PngInfo()
    info.add_text("Comment", f"JUDGE-SCRIPT:{behaviour}")
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG", pnginfo=info)
    return out.getvalue()


def level_outputs(reference: Path, level: str, spec: dict[str, Any] | None = None) -> dict[str, bytes]:
    spec = spec or LEVELS[level]
    curve = np.load(reference / "spectrum_ref.npy")
    pixels = np.asarray(Image.open(reference / "spectrum_ref.png").convert("RGB"))
    if spec.get("noise"):
        jitter = np.random.RandomState(len(level)).randint(-40, 40, pixels.shape)
        pixels = np.clip(pixels.astype(int) + jitter, 0, 255).astype("uint8")
    spectrum = curve[::-1].copy() if spec["scale"] < 0 else curve * spec["scale"]
    report = f"JUDGE-SCRIPT:{spec['report']} The peak of level {level}."
    if spec.get("long"):
        report += " Long discussion." * 300
    return {"spectrum.npy": npy(spectrum), "report.md": report.encode(),
            "spectrum.png": marked_png(pixels, spec["figure"])}


def write_results(results: Path, reference: Path, params: dict[str, Any],
                  levels: dict[str, dict[str, Any]] | None = None, instance_id: str = INSTANCE) -> Path:
    """A results dir as `asibench run` writes it, one result per level, parameters recorded."""
    results.mkdir(parents=True, exist_ok=True)
    (results / "run_metadata.json").write_text(json.dumps({"framework_version": "0.2.0"}))
    for level, spec in (levels or LEVELS).items():
        base = write_result(results, instance_id, level, level_outputs(reference, level, spec))
        path = results / TASK / f"{base}.json"
        record = json.loads(path.read_text())
        record["parameters"] = params
        path.write_text(json.dumps(record))
    return results


# ---------------------------------------------------------------- the agent judge fixture
AGENT_LAYOUTS = Path(__file__).parent / "agent_layouts"
AGENT_TASK = "materials.agent_judged_report"
AGENT_INSTANCE = f"{AGENT_TASK}__seed42"
# The codex judge's key: not shaped like any provider's key, so only its exact value can give it away.
CODEX_KEY_ENV, CODEX_KEY = "AGENT_JUDGE_TEST_KEY", "Zq7Vv2m9x4Lp0R3tW8yK"
AGENT_JUDGE_CEILING = 120  # ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT of the tests' servers
FAKE_CLI = Path(__file__).resolve().parents[1] / "fake_judge_cli.py"


def fake_cli_dir(base: Path) -> Path:
    """`codex` and `claude` (tests/fake_judge_cli.py) on a directory of their own, world-readable."""
    bin_dir = base / "judge-bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("codex", "claude"):
        shutil.copyfile(FAKE_CLI, bin_dir / name)
        (bin_dir / name).chmod(0o755)
    bin_dir.chmod(0o755)
    return bin_dir


def agent_judge_env(endpoint: JudgeEndpoint, cli_dir: Path) -> dict[str, str]:
    """A server's settings for both judge kinds against the local endpoint: chat judges with SECRET, the
    codex judge with CODEX_KEY, and the agent judge's timeout ceiling."""
    return {**endpoint_env(endpoint), "ASIBENCH_AGENT_JUDGE_PATH": str(cli_dir),
            "ASIBENCH_AGENT_JUDGE_CODEX_BASE_URL": endpoint.url + "/v1",
            "ASIBENCH_AGENT_JUDGE_CODEX_KEY_ENV": CODEX_KEY_ENV, CODEX_KEY_ENV: CODEX_KEY,
            "ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT": str(AGENT_JUDGE_CEILING)}


@pytest.fixture(scope="module")
def agent_catalog(django_db_setup: None, django_db_blocker: object) -> Iterator[dict[str, Any]]:
    """The agent judge fixture task loaded as the README says (`manage.py catalog_load --tasks-dir`), with
    the tests' agent judge ceiling; its load report and the committed rows."""
    import subprocess
    import sys

    from scoring.models import Dataset, Instance, Task
    from tests.support import REPO, subprocess_env, test_database_env

    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        env = subprocess_env({**test_database_env(), "ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT": str(AGENT_JUDGE_CEILING)})
        done = subprocess.run([sys.executable, "manage.py", "catalog_load", "--tasks-dir", str(AGENT_LAYOUTS),
                               "--datasets", "seed42"], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=600, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        instance = Instance.objects.get(instance_id=AGENT_INSTANCE)
        rows = [list(Dataset.objects.all()), list(Task.objects.all()), list(Instance.objects.all())]
        yield {"load_output": done.stdout, "params": instance.params, "rows": rows}
        from portal.submissions.models import Submission

        Submission.objects.all().delete()
        Task.objects.all().delete()
        Dataset.objects.all().delete()


def agent_results(results: Path, params: dict[str, Any], reports: dict[str, str]) -> Path:
    """A results dir of the agent judge fixture, one result per level with its report.md."""
    results.mkdir(parents=True, exist_ok=True)
    (results / "run_metadata.json").write_text(json.dumps({"framework_version": "0.2.0"}))
    for level, report in reports.items():
        base = write_result(results, AGENT_INSTANCE, level, {"report.md": report.encode()})
        path = results / AGENT_TASK / f"{base}.json"
        record = json.loads(path.read_text())
        record["parameters"] = params
        path.write_text(json.dumps(record))
    return results
