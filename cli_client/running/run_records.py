"""What `asibench run` writes: result JSON, provenance, run_metadata.json (client contract §5.4–§5.7).

Everything here is a pure function of its arguments, so the formats can be checked without
running an agent. Sanitising follows the official client: credential-like keys and values
become `<redacted>`, known host paths become placeholders, other absolute paths `<abs_path>`.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cli_client import __version__
from cli_client.running.trajectory import ADAPTER_CLASS, summarize_model_calls
from contracts.agent_label import configured_name

RESULT_SCHEMA_VERSION = 1
UNSCORED_MESSAGE = "Submit this run to https://asibench.apexin.ai/ for official scoring."

_SENSITIVE_CONFIG_KEYS = frozenset({"api_key", "token", "password", "secret", "authorization"})
_SENSITIVE_PERSISTED_KEYS = frozenset({
    "authorization", "proxy_authorization", "cookie", "set_cookie", "x_api_key", "api_key", "apikey",
    "access_token", "refresh_token", "id_token", "client_secret", "password", "passwd", "secret", "token",
})
_CREDENTIAL_ASSIGNMENT = re.compile(
    r"(?i)\b(authorization|proxy-authorization|x-api-key|api[_-]?key|access[_-]?token|refresh[_-]?token"
    r"|cookie|set-cookie)(\s*[:=]\s*)[\"']?(?:Bearer\s+)?[^\s,;}\"']+[\"']?"
)
_BEARER = re.compile(r"(?i)\bBearer\s+[A-Za-z0-9._~+/=-]+")
_ABSOLUTE_PATH = re.compile(r"(?<![A-Za-z0-9_>.])/(?:[^/\s'\"`]+/){1,}[^/\s'\"`]+")
_HTTP_URL = re.compile(r"https?://[^\s'\"`]+")
_DEPENDENCIES = {"numpy": "numpy", "scipy": "scipy", "click": "click", "litellm": "litellm",
                 "pyyaml": "PyYAML", "openai": "openai"}


def _normalised_key(key: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", key.lower()).strip("_")


class Sanitizer:
    """Replaces host paths (workspace, output dir, repo root, home) and credentials in persisted text."""

    def __init__(self, *, output_dir: Path, repo_root: Path | None, home: Path | None,
                 workspace: Path | None = None) -> None:
        pairs: list[tuple[str, str]] = []
        for path, placeholder in ((workspace, "<workspace>"), (output_dir, "<run_output_dir>"),
                                  (repo_root, "<repo_root>"), (home, "<home>")):
            if path is None:
                continue
            for text in {str(path), str(Path(path).resolve())}:
                if text and text != "/" and text not in (p for p, _ in pairs):
                    pairs.append((text, placeholder))
        self.replacements = sorted(pairs, key=lambda item: len(item[0]), reverse=True)

    def for_workspace(self, workspace: Path) -> Sanitizer:
        clone = Sanitizer.__new__(Sanitizer)
        extra = [(text, "<workspace>") for text in {str(workspace), str(workspace.resolve())}]
        clone.replacements = sorted(self.replacements + extra, key=lambda item: len(item[0]), reverse=True)
        return clone

    def text(self, value: str | bytes) -> str:
        text = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
        for source, placeholder in self.replacements:
            text = text.replace(source, placeholder)
        text = _CREDENTIAL_ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}<redacted>", text)
        text = _BEARER.sub("Bearer <redacted>", text)
        # URLs are evidence and look like paths; redact only the text between them.
        parts, cursor = [], 0
        for match in _HTTP_URL.finditer(text):
            parts.append(_ABSOLUTE_PATH.sub("<abs_path>", text[cursor:match.start()]))
            parts.append(match.group(0))
            cursor = match.end()
        parts.append(_ABSOLUTE_PATH.sub("<abs_path>", text[cursor:]))
        return "".join(parts)

    def value(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: "<redacted>" if _normalised_key(str(k)) in _SENSITIVE_PERSISTED_KEYS else self.value(v)
                    for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        if isinstance(value, Path):
            return self.text(str(value))
        if isinstance(value, str):
            return self.text(value)
        return value


def redact_agent_config(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "<redacted>" if str(k).lower() in _SENSITIVE_CONFIG_KEYS else redact_agent_config(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact_agent_config(v) for v in value]
    return value


def agent_provenance(agent_cmd: str, agent_config: dict[str, Any], sanitizer: Sanitizer) -> dict[str, Any]:
    """`provenance.agent` for an `--agent-cmd` run (the only kind our client runs)."""
    return sanitizer.value({
        # The label the Portal shows; without one it shortens `cmd_template` (contracts.agent_label).
        "agent_name": configured_name(agent_config) or None,
        "cmd_template": agent_cmd,
        "config": redact_agent_config(agent_config),
        "allow_external_tools": False,
        "tool_mode": "restricted",
        "adapter_class": ADAPTER_CLASS,
    })


def runtime_provenance(task: dict[str, Any], image_identity: str | None = None) -> dict[str, Any]:
    """Runtime provenance: a host process, or (`os`, with `image_identity`) the container image."""
    return {
        "python_requirement": task.get("_runtime_python"),
        "resolved_python_version": None,
        "python_requirement_satisfied": None,
        "packages": list(task.get("_runtime_packages") or []),
        "task_env_cache_key": None,
        "runtime_source": "docker_image" if image_identity else "host_process",
        "runtime_interpreter": None,
        "docker_image_identity": image_identity,
    }


def _git(args: list[str]) -> subprocess.CompletedProcess[str] | None:
    try:
        # --no-optional-locks: `status` must not rewrite the index of the user's checkout.
        return subprocess.run(["git", "--no-optional-locks", *args], capture_output=True, text=True,
                              timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None


def run_metadata(*, agent_config: dict[str, Any], task_versions: dict[str, str], sandbox: dict[str, Any],
                 task_runtime: dict[str, Any]) -> dict[str, Any]:
    commit = _git(["rev-parse", "--short", "HEAD"])
    status = _git(["status", "--porcelain"])
    dependencies = {}
    for name, dist in _DEPENDENCIES.items():
        try:
            dependencies[name] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            pass
    metadata: dict[str, Any] = {
        "framework_version": __version__,
        "git_commit": commit.stdout.strip() if commit and commit.returncode == 0 else "unknown",
        "git_dirty": bool(status and status.returncode == 0 and status.stdout.strip()),
        "timestamp": datetime.now(UTC).isoformat(),
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "dependencies": dependencies,
    }
    for key, value in (("agent_config", agent_config), ("task_versions", task_versions),
                       ("sandbox", sandbox), ("task_runtime", task_runtime)):
        if value:
            metadata[key] = value
    return metadata


def unscored_placeholder() -> list[dict[str, Any]]:
    return [{"scorer_name": "unscored_submission", "score": 0.0, "max_score": 0.0, "passed": True,
             "details": {"unscored_submission": True}, "message": UNSCORED_MESSAGE}]


def model_call_observability(calls: list[dict[str, Any]] | None = None,
                             records_file: str | None = None) -> dict[str, Any]:
    """`agent_output.model_call_observability` as the official client writes it: without call records (a shell
    command exposes no call boundaries, unless its agent leaves a trajectory) `not_supported`; with them,
    `captured` when every call's outcome is known, else `partial`, and the records' summary."""
    if not calls:
        return {"schema_version": 1, "capture_status": "not_supported", "records_file": None,
                "summary": {"calls_attempted": None, "empty_response_rate": None,
                            "empty_response_rate_status": "unknown",
                            "reason": "adapter_does_not_expose_model_call_boundaries"}}
    summary = summarize_model_calls(calls)
    return {"schema_version": 1,
            "capture_status": "captured" if summary["empty_response_rate_status"] == "observed" else "partial",
            "records_file": records_file, "summary": summary}


def write_json_atomic(path: Path, data: Any) -> None:
    """Write next to the target and rename, so a result file is either whole or absent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def produced_log(stdout: str, stderr: str, returncode: int | None) -> str:
    """The `agent_output.log` text: stdout, then stderr and a non-zero exit code (as upstream)."""
    parts = [stdout] if stdout else []
    if stderr.strip():
        parts.append(f"[stderr]\n{stderr.strip()}")
    if returncode not in (None, 0):
        parts.append(f"[exit_code] {returncode}")
    return "\n\n".join(parts)


def split_outputs(names: Iterable[str]) -> tuple[list[str], list[str]]:
    names = list(names)
    return [n for n in names if n.endswith(".py")], [n for n in names if not n.endswith(".py")]
