"""What `asibench run` writes: result JSON, provenance, run_metadata.json (client contract §5.4–§5.7).

Everything here is a pure function of its arguments, so the formats can be checked without
running an agent. Sanitising follows the official client: credential-like keys and values
become `<redacted>`, known host paths become placeholders, other absolute paths `<abs_path>`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import math
import os
import platform
import re
import subprocess
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cli_client import __version__
from contracts.agent_label import configured_name

RESULT_SCHEMA_VERSION = 1
ADAPTER_CLASS = "CLIAgentAdapter"
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


def model_call_observability() -> dict[str, Any]:
    # A shell command exposes no model-call boundaries; the official client records the same.
    return {"schema_version": 1, "capture_status": "not_supported", "records_file": None,
            "summary": {"calls_attempted": None, "empty_response_rate": None,
                        "empty_response_rate_status": "unknown",
                        "reason": "adapter_does_not_expose_model_call_boundaries"}}


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


# --- what the agent did (contract §5.4 `trajectory_summary`, `file_versions`; §5.8 `_trajectory.jsonl`) ---

TRAJECTORY_FILE = "_trajectory.jsonl"
LOG_TAIL_CHARS = 1 << 20
"""Of stdout and of stderr each, in `agent_output.log`: the sidecar files keep everything, and a
result.json over the Portal's per-file cap (8 MiB) would refuse the whole bundle."""
_EDIT_TOOLS = ("Write", "Edit", "NotebookEdit", "write", "edit", "patch")
_SHELL_TOOLS = ("Bash", "command_execution", "shell", "bash")


def log_tail(text: str) -> str:
    if len(text) <= LOG_TAIL_CHARS:
        return text
    return f"[… {len(text) - LOG_TAIL_CHARS} earlier characters are in the raw log file]\n" + text[-LOG_TAIL_CHARS:]


def _short_hash(data: bytes) -> str:
    # 16 hex characters, as the official client's file history records them.
    return hashlib.sha256(data).hexdigest()[:16]


def _events(jsonl: str) -> Iterable[tuple[int, dict[str, Any]]]:
    for step, line in enumerate(line for line in jsonl.splitlines() if line.strip()):
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield step, event


def _blocks(event: dict[str, Any]) -> list[dict[str, Any]]:
    message = event.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _edit_summary(tool: str, args: dict[str, Any]) -> str | None:
    old, new = str(args.get("old_string") or ""), str(args.get("new_string") or "")
    if tool != "Edit" or not old or not new:
        return None
    return "'{}' → '{}'".format(old[:50].replace("\n", "\\n"), new[:50].replace("\n", "\\n"))


def trajectory_record(jsonl: str) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """`trajectory_summary` and `file_versions` of a Claude-Code-style JSONL trajectory (the schema the
    official client reads from `_trajectory.jsonl` by default): assistant text blocks are turns, tool_use
    blocks tool calls, shell tool results code executions; Write/Edit/NotebookEdit inputs file versions."""
    turns = calls = thinking = executions = failures = 0
    tools: dict[str, int] = {}
    modified: set[str] = set()
    names: dict[str, str] = {}
    versions: dict[str, list[dict[str, Any]]] = {}
    for step, event in _events(jsonl):
        kind = event.get("type")
        timestamp = event.get("timestamp")
        stamp = (int(timestamp * 1000) if isinstance(timestamp, (int, float)) and math.isfinite(timestamp)
                 and abs(timestamp) < 1e15 else None)
        for block in _blocks(event):
            btype = block.get("type")
            if kind == "assistant" and btype == "text":
                turns += 1
            elif kind == "assistant" and btype == "thinking":
                thinking += len(str(block.get("thinking", "")))
            elif kind == "assistant" and btype == "tool_use":
                name = str(block.get("name") or "unknown")
                calls += 1
                tools[name] = tools.get(name, 0) + 1
                names[str(block.get("id") or "")] = name
                raw = block.get("input")
                args: dict[str, Any] = raw if isinstance(raw, dict) else {}
                path = str(args.get("file_path") or args.get("notebook_path") or args.get("path") or "")
                if name in _EDIT_TOOLS and path:
                    modified.add(path)
                    if name in ("Write", "Edit", "NotebookEdit"):
                        text = (str(args.get("content", "")) if name == "Write" else
                                f"{args.get('old_string', '')}|{args.get('new_string', '')}" if name == "Edit" else
                                str(args.get("new_source", args.get("content", ""))))
                        history = versions.setdefault(path, [])
                        history.append({"version": len(history) + 1,
                                        "action": {"Write": "write", "Edit": "edit"}.get(name, "notebook_edit"),
                                        "step_index": step, "timestamp_ms": stamp,
                                        "content_hash": _short_hash(text.encode("utf-8", "replace")),
                                        # an edit's length is its new text's, as upstream records it
                                        "content_length": len(str(args.get("new_string", ""))) if name == "Edit"
                                        else len(text), "diff_summary": _edit_summary(name, args)})
            elif kind == "user" and btype == "tool_result":
                if names.get(str(block.get("tool_use_id") or "")) in _SHELL_TOOLS:
                    executions += 1
                    failures += bool(block.get("is_error"))
    summary = {"total_turns": turns, "total_tool_calls": calls, "tool_call_distribution": tools,
               "thinking_total_chars": thinking, "total_code_executions": executions,
               "code_execution_failures": failures, "unique_files_modified": sorted(modified)}
    return summary, versions


def final_output_versions(persisted: dict[str, Any] | None,
                          history: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """`history` plus, per persisted declared output, one `final` version with the hash of the bytes the
    agent left: the runner sees the workspace only once the agent has finished, so that is the one
    version it observes itself (earlier ones come only from the agent's own trajectory)."""
    out = {path: list(versions) for path, versions in history.items()}
    for entry in (persisted or {}).get("files") or []:
        if entry.get("missing") or not entry.get("sha256"):
            continue
        versions = out.setdefault(str(entry["path"]), [])
        versions.append({"version": len(versions) + 1, "action": "final", "step_index": None, "timestamp_ms": None,
                         "content_hash": str(entry["sha256"])[:16], "content_length": entry.get("bytes"),
                         "diff_summary": None})
    return out
