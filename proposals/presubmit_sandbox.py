"""`asibench validate --pre-submit` of a proposal, run inside the scoring sandbox.

The author's generator and scorer are untrusted code: the proposal's files are copied into a
scratch dir laid out as `tasks/<domain>/<name>/` and the validator runs there under the
configured backend (no network; the server's time, whole-run memory, process and scratch-disk
limits, never the author's), in a Celery worker (proposals.tasks), never in the web process.
The validator's only output the host reads is its stdout.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from proposals.files import blob_read
from scoring.catalog import sandbox_backend, scratch_root
from scoring.sandbox import Limits, python_runtime_env, python_runtime_mounts
from scoring.sandbox.process import scratch_tree


def _parse_report(stdout: str) -> dict[str, Any] | None:
    start = stdout.find("{")
    if start < 0:
        return None
    try:
        report = json.loads(stdout[start:])
    except ValueError:
        return None
    return report if isinstance(report, dict) and "checks" in report else None


def validate_in_sandbox(task_id: str, files: list[tuple[str, str]]) -> dict[str, Any]:
    """Validate the files [(path, blob)] as task `task_id`; returns {"ok", "checks", "warnings", "error"}."""
    backend = sandbox_backend()
    domain, name = task_id.split(".", 1)
    with scratch_tree("asibench-proposal-", scratch_root()) as work:
        task_dir = work / "tasks" / domain / name
        for path, blob in files:
            target = (task_dir / path).resolve()
            if task_dir.resolve() not in target.parents:  # names were checked on the way in; be sure
                return {"ok": False, "checks": [], "warnings": [], "error": f"unsafe path {path!r}"}
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob_read(blob))
        mounts = (backend.runtime_mounts() if backend.name == "docker"
                  else python_runtime_mounts(packages=("scoring", "cli_client")))
        seconds = settings.PROPOSAL_VALIDATION_TIMEOUT_SECONDS
        limits = Limits(wall_clock_seconds=seconds, cpu_seconds=seconds, memory_bytes=settings.SANDBOX_MEMORY_BYTES,
                        max_processes=settings.SANDBOX_MAX_PROCESSES, max_file_bytes=512 << 20,
                        max_scratch_bytes=settings.SANDBOX_SCRATCH_BYTES, network=False, env=python_runtime_env())
        argv = [*backend.python_command(), "-m", "cli_client", "validate", "--pre-submit", str(task_dir), "--json",
                "--gt-timeout", str(settings.GENERATION_TIMEOUT_SECONDS)]
        result = backend.run(argv, work, list(mounts), limits)
    report = _parse_report(result.stdout_text)
    if report is None:
        tail = " ".join(result.stderr_text.strip().splitlines()[-3:])[:500]
        reason = result.reason or tail or f"exit status {result.returncode}"
        return {"ok": False, "checks": [], "warnings": [], "error": f"the validator did not finish: {reason}"}
    if result.limit:
        return {"ok": False, "checks": report.get("checks") or [], "warnings": report.get("warnings") or [],
                "error": f"the validator was stopped: {result.reason}"}
    return {"ok": bool(report.get("ok")) and result.ok, "checks": report.get("checks") or [],
            "warnings": report.get("warnings") or [], "error": ""}
