"""`asibench validate --pre-submit` of a proposal, run inside the scoring sandbox.

The author's generator and scorer are untrusted code: the proposal's files are copied into a
scratch dir laid out as `tasks/<domain>/<name>/` and the validator runs there under the
configured backend (no network; the server's time, whole-run memory, process and scratch-disk
limits, never the author's), in a Celery worker (proposals.tasks), never in the web process.
The validator's only output the host reads is its stdout: one line, marked with a key the host
gives it and task code never sees.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from django.conf import settings

from proposals.files import blob_read
from scoring.sandbox import python_runtime_mounts, server_backend
from scoring.sandbox.limits import proposal_validation_limits
from scoring.sandbox.process import scratch_tree
from scoring.task_storage import scratch_root

REPORT_KEY_FILE = "report.key"
REPORT_TEXT_LIMIT = 4000
REPORT_ITEMS_LIMIT = 200


def storable_text(value: Any, limit: int = REPORT_TEXT_LIMIT) -> str:
    """Text from the sandbox as the database can keep it: PostgreSQL text and jsonb refuse U+0000,
    so each NUL becomes U+FFFD (the reader still sees where one was), and long text is cut."""
    text = value if isinstance(value, str) else json.dumps(value) if isinstance(value, (int, float, bool)) else ""
    return text[:limit].replace("\x00", "\ufffd")


def _report_check(check: Any) -> dict[str, Any] | None:
    if not isinstance(check, dict):
        return None
    details = check.get("details")
    return {"name": storable_text(check.get("name"), 200), "status": storable_text(check.get("status"), 20),
            "summary": storable_text(check.get("summary")),
            "details": [storable_text(d) for d in details[:REPORT_ITEMS_LIMIT]] if isinstance(details, list) else []}


def _parse_report(stdout: str, key: str) -> dict[str, Any] | None:
    """The validator's JSON report in the shape the portal stores, or None.

    Task code shares the sandbox's stdout with the validator and may print reports of its own; only
    the line after `key` is the validator's (see cli_client.commands.validate.keyed_report). Its
    contents still come from hostile files: only the known fields are kept, as storable text."""
    lines = [line[len(key) + 1:] for line in stdout.splitlines() if line.startswith(f"{key} ")]
    if len(lines) != 1:
        return None
    try:
        report = json.loads(lines[0], parse_constant=str)  # NaN/Infinity: JSONB has neither
    except (ValueError, RecursionError):
        return None
    if not isinstance(report, dict) or not isinstance(report.get("checks"), list):
        return None
    warnings = report.get("warnings")
    return {"ok": report.get("ok") is True,
            "checks": [c for c in map(_report_check, report["checks"][:REPORT_ITEMS_LIMIT]) if c is not None],
            "warnings": [storable_text(w) for w in warnings[:REPORT_ITEMS_LIMIT]] if isinstance(warnings, list) else []}


def validate_in_sandbox(task_id: str, files: list[tuple[str, str]]) -> dict[str, Any]:
    """Validate the files [(path, blob)] as task `task_id`; returns {"ok", "checks", "warnings", "error"}."""
    backend = server_backend(settings.SCORING_SANDBOX)
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
                  else python_runtime_mounts(packages=("scoring", "contracts", "cli_client")))
        limits = proposal_validation_limits(settings)
        # The key file is read and deleted by the validator before any task code runs. -P: the
        # writable workdir (the cwd) is not on the validator's import path.
        key = secrets.token_hex(16)
        (work / REPORT_KEY_FILE).write_text(key, encoding="utf-8")
        argv = [*backend.python_command(), "-P", "-m", "cli_client", "validate", "--pre-submit", str(task_dir),
                "--report-key-file", str(work / REPORT_KEY_FILE),
                "--gt-timeout", str(settings.GENERATION_TIMEOUT_SECONDS)]
        result = backend.run(argv, work, list(mounts), limits)
    report = _parse_report(result.stdout_text, key)
    if report is None:
        tail = storable_text(" ".join(result.stderr_text.strip().splitlines()[-3:]), 500)
        reason = result.reason or tail or f"exit status {result.returncode}"
        return {"ok": False, "checks": [], "warnings": [], "error": f"the validator did not finish: {reason}"}
    if result.limit:
        return {**report, "ok": False, "error": f"the validator was stopped: {result.reason}"}
    return {**report, "ok": report["ok"] and result.ok, "error": ""}
