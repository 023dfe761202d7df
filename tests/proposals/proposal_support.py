"""Helpers for the proposal tests: a task scaffolded by `asibench task create` with real evidence."""

from __future__ import annotations

import hashlib
import io
import shutil
import uuid
from pathlib import Path

from tests.support import OUR_CLI, run_cli

EVIDENCE = """\
schema_version: 1
scientific_goal: "Recover the spectrum of a real symmetric matrix to machine precision."
core_method: "Tridiagonal reduction and implicit QR."
why_difficult: "B3/B4 give no method."
difficulty_assessment: "Easy template, used for tests."
feasibility_checklist:
  version: 2
  items:
    - {{id: deterministic_ground_truth, status: yes}}
local_testing_done: {done}
local_test_results:
  - provider: OpenAI
    family: "gpt-x"
    version: base
    agent: codex_cli
    sandbox: os
    results:
      - {{prompt_level: b1, score: {b1}}}
      - {{prompt_level: b2, score: 64}}
      - {{prompt_level: b3, score: 31}}
      - {{prompt_level: b4, score: 22}}
"""


def evidence(done: str = "true", b1: str = "82") -> str:
    return EVIDENCE.format(done=done, b1=b1)


def scaffold_template(base: Path, env: dict[str, str], domain: str = "physics", name: str = "toy_spectrum") -> Path:
    """`asibench task create` (our CLI) plus a filled-in task_submission.yaml."""
    done = run_cli([*OUR_CLI, "task", "create", "--domain", domain, "--name", name, "--tasks-dir", str(base)], env)
    assert done.returncode == 0, done.stdout + done.stderr
    task_dir = base / domain / name
    (task_dir / "task_submission.yaml").write_text(evidence(), encoding="utf-8")
    (task_dir / "data" / "nested").mkdir(parents=True)
    (task_dir / "data" / "nested" / "notes.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    return task_dir


def copy_task(template: Path, dest_root: Path) -> Path:
    target = dest_root / template.parent.name / template.name
    shutil.copytree(template, target)
    return target


def local_hashes(task_dir: Path) -> dict[str, str]:
    from contracts.task_files import collect_task_files

    return {f.name: hashlib.sha256(f.path.read_bytes()).hexdigest() for f in collect_task_files(task_dir)}


def multipart(files: dict[str, bytes], field: str = "files") -> tuple[bytes, str]:
    boundary = "----asibench" + uuid.uuid4().hex
    out = io.BytesIO()
    for name, data in files.items():
        quoted = name.replace("\\", "\\\\").replace('"', '\\"')
        out.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{quoted}"\r\n'
                  "Content-Type: application/octet-stream\r\n\r\n".encode())
        out.write(data + b"\r\n")
    out.write(f"--{boundary}--\r\n".encode())
    return out.getvalue(), f"multipart/form-data; boundary={boundary}"


def task_files(task_dir: Path) -> dict[str, bytes]:
    from contracts.task_files import collect_task_files

    return {f.name: f.path.read_bytes() for f in collect_task_files(task_dir)}


def stored_blobs() -> list[Path]:
    from django.conf import settings

    root = Path(settings.MEDIA_ROOT) / "proposals"
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def finished_job(job, timeout: float = 600.0):  # noqa: ANN001, ANN201
    """Wait until a Celery worker has finished the ProposalJob; returns it refreshed."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if not job.is_active:
            return job
        time.sleep(0.5)
    raise AssertionError(f"job {job.pk} still {job.status} after {timeout:g} s")
