"""Runs made of the labelled set's cases, uploaded through intake: for the scan's Portal tests."""

import hashlib
import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client

from contracts.bundle import build_bundle, write_archive
from portal.submissions.models import Submission
from scoring.models import Dataset, Instance, Task
from tests.results_tree import write_result
from tests.scanners.corpus_eval import CORPUS
from tests.scanners.corpus_specs import TASKS
from tests.support import issue_token

# (corpus case, the task key in corpus_specs.TASKS, the level it is uploaded as)
RESULTS = [("clean_script_then_run", "pendulum", "b1"), ("x_search_benchmark", "pendulum", "b2"),
           ("x_ignore_instructions", "pendulum", "b3"), ("x_typed_no_code", "pendulum", "b4"),
           ("x_copy_input", "forecast", "b2"), ("clean_forecast_script", "forecast", "b3")]


def instance_archive(instance_id: str, files: dict[str, str]) -> tuple[str, str, int]:
    """A public instance archive in storage, as catalog generation leaves it: (name, sha256, bytes)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for rel, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{instance_id}/{rel}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    data = buffer.getvalue()
    name = default_storage.save(f"instances/{instance_id}-{hashlib.sha256(data).hexdigest()[:8]}.tar.gz",
                                ContentFile(data))
    return name, hashlib.sha256(data).hexdigest(), len(data)


@pytest.fixture
def corpus_catalog(db: None) -> dict[str, Instance]:
    """The labelled set's tasks as catalog tasks, each with one seed42 instance whose archive holds the task's
    prompt for every level and its inputs."""
    dataset = Dataset.objects.create(name="seed42", seed=42, official=True, accepted_sandbox_modes=["os", "linux_ns"])
    out = {}
    for key in ("pendulum", "forecast"):
        spec = TASKS[key]
        task = Task.objects.create(id=spec["task_id"], domain=spec["task_id"].split(".")[0], name=key, version="1",
                                   status="final", source_hash="0" * 64, source_dir="/nonexistent",
                                   declared_outputs=[{"name": n, "type": k} for n, k in spec["outputs"]])
        iid = f"{task.id}__seed42"
        files = {f"prompt_{level}.md": spec["prompt"] for level in ("b1", "b2", "b3", "b4")} | spec["inputs"]
        name, digest, size = instance_archive(iid, files)
        out[key] = Instance.objects.create(
            instance_id=iid, dataset=dataset, task=task, task_revision=1, task_source_hash="0" * 64, params={},
            input_archive=name, input_sha256=digest, input_bytes=size, reference_archive="x",
            reference_sha256="0" * 64, generator_hash="0" * 64)
    return out


def results_tree(root: Path, results: list[tuple[str, str, str]] = RESULTS,
                 log_of: dict[str, str] | None = None) -> Path:
    """A results tree whose results are the labelled set's cases: each result.json records what the official
    client recorded for the case (its summary log, trajectory summary, file history), with the case's outputs."""
    for case, key, level in results:
        directory = CORPUS / case
        outputs = {p.relative_to(directory / "outputs").as_posix(): p.read_bytes()
                   for p in sorted((directory / "outputs").rglob("*")) if p.is_file()}
        iid = f"{TASKS[key]['task_id']}__seed42"
        base = write_result(root, iid, level, outputs)
        path = root / TASKS[key]["task_id"] / f"{base}.json"
        result = json.loads(path.read_text())
        recorded = json.loads((directory / "result.json").read_text())["agent_output"]
        result["agent_output"].update({k: v for k, v in recorded.items() if k in (
            "log", "error_message", "trajectory_summary", "file_versions")})
        if log_of and case in log_of:
            result["agent_output"]["log"] = log_of[case]
        path.write_text(json.dumps(result))
    return root


def upload(client: Client, user: Any, results: Path, tmp_path: Path) -> Submission:
    bundle = tmp_path / "bundle"
    build_bundle(results, bundle)
    body = write_archive(bundle, bundle.with_suffix(".tar.gz")).read_bytes()
    response = client.generic("POST", "/api/v1/submissions/bundle", body, content_type="application/gzip",
                              HTTP_AUTHORIZATION=f"Bearer {issue_token(user)}")
    assert response.status_code in (200, 201), response.content
    return Submission.objects.get(id=response.json()["submission_id"])


