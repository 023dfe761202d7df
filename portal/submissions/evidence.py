"""What a result says the agent did (client contract §5.4), kept for reviewers within fixed caps.

Pure Python, no Django: the bundle verifier calls `agent_evidence` on every declared result.json.
Everything comes from the submitter, so every field is typed, clamped and cut here, once: a log
keeps only its tail, with control characters (other than newline and tab) and ANSI escapes
removed; names and paths are cut short; counts are non-negative integers below a ceiling; lists
and maps keep a bounded number of items. Templates escape the text as usual. Nothing here is
ever public: only the run's owner and maintainers see it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

BENCHMARK_TIMEOUT_SECONDS = 10_800
_COUNT_CEILING = 10**9
_NAME_CHARS = 80
_PATH_CHARS = 240
_SHORT_CHARS = 300
_ERROR_CHARS = 2_000
_TOOLS = 30
_FILES = 50
_VERSIONS_PER_FILE = 20
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-_]")
# Lone surrogates too: JSON can escape them, but they are not text (UTF-8 and so the database refuse them).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")
_HEX = re.compile(r"^[0-9a-fA-F]{1,64}$")


@dataclass(frozen=True)
class EvidenceLimits:
    log_tail_chars: int = 16_000


def clean_text(value: Any, limit: int, *, tail: bool = False) -> str:
    """Printable text of at most `limit` characters (the end of it with `tail`)."""
    if not isinstance(value, str):
        return ""
    # Cut before cleaning too, so a huge string costs one slice, not a regex pass over megabytes.
    window = value[-4 * limit:] if tail else value[:4 * limit]
    text = _CONTROL.sub("", _ANSI.sub("", window.replace("\r\n", "\n").replace("\r", "\n")))
    return text[-limit:] if tail else text[:limit]


def _count(value: Any) -> int | None:
    if type(value) is bool or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return max(0, min(int(value), _COUNT_CEILING))


def _seconds(value: Any) -> float | None:
    if type(value) is bool or not isinstance(value, (int, float)):
        return None
    number = float(value)
    if not math.isfinite(number) or number < 0:
        return None
    return round(min(number, 10.0**8), 3)


def _trajectory(summary: Any) -> dict[str, Any] | None:
    if not isinstance(summary, dict):
        return None
    tools: dict[str, int] = {}
    distribution = summary.get("tool_call_distribution")
    if isinstance(distribution, dict):
        counted = [(clean_text(str(k), _NAME_CHARS) or "?", _count(v)) for k, v in distribution.items()]
        for name, n in sorted(((k, n) for k, n in counted if n is not None), key=lambda kv: (-kv[1], kv[0])):
            if len(tools) < _TOOLS:
                tools[name] = tools.get(name, 0) + n
    files = summary.get("unique_files_modified")
    modified = [clean_text(f, _PATH_CHARS) for f in files if isinstance(f, str)][:_FILES] if isinstance(
        files, list) else []
    return {
        "turns": _count(summary.get("total_turns")),
        "tool_calls": _count(summary.get("total_tool_calls")),
        "tools": tools,
        "thinking_chars": _count(summary.get("thinking_total_chars")),
        "code_executions": _count(summary.get("total_code_executions")),
        "code_failures": _count(summary.get("code_execution_failures")),
        "files_modified": modified,
        "files_modified_total": len(files) if isinstance(files, list) else 0,
    }


def _versions(history: Any) -> dict[str, list[dict[str, Any]]]:
    if not isinstance(history, dict):
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for path, versions in history.items():
        if len(out) >= _FILES:
            break
        if not isinstance(versions, list):
            continue
        kept = []
        for v in versions[-_VERSIONS_PER_FILE:]:
            if not isinstance(v, dict):
                continue
            digest = v.get("content_hash")
            kept.append({
                "version": _count(v.get("version")),
                "action": clean_text(v.get("action"), 20),
                "step": _count(v.get("step_index")),
                "hash": digest if isinstance(digest, str) and _HEX.match(digest) else "",
                "length": _count(v.get("content_length")),
                "diff": clean_text(v.get("diff_summary"), _SHORT_CHARS),
            })
        out[clean_text(str(path), _PATH_CHARS) or "?"] = kept
    return out


def agent_evidence(result: dict[str, Any], task_info: Any, limits: EvidenceLimits) -> dict[str, Any]:
    """The reviewer's view of one result: status, timings, log tail, trajectory summary, file history."""
    agent_output = result.get("agent_output")
    agent_output = agent_output if isinstance(agent_output, dict) else {}
    log = agent_output.get("log")
    timeout = task_info.get("timeout_seconds") if isinstance(task_info, dict) else None
    history = agent_output.get("file_versions")
    return {
        "status": clean_text(result.get("status"), 20),
        "agent_status": clean_text(agent_output.get("status"), 20),
        "exit_code": _count(agent_output.get("process_exit_code")),
        "signal": _count(agent_output.get("termination_signal")),
        "timeout_phase": clean_text(agent_output.get("timeout_phase"), 40),
        "error": clean_text(agent_output.get("error_message"), _ERROR_CHARS),
        "elapsed_seconds": _seconds(result.get("execution_time_seconds")),
        "timeout_seconds": _count(timeout) if _count(timeout) else None,
        "log_tail": clean_text(log, limits.log_tail_chars, tail=True),
        "log_chars": len(log) if isinstance(log, str) else 0,
        "log_chars_estimated": False,
        "trajectory": _trajectory(agent_output.get("trajectory_summary")),
        "file_versions": _versions(history),
        "file_versions_total": len(history) if isinstance(history, dict) else 0,
    }
