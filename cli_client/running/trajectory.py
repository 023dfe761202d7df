"""What the agent did, read from its JSONL trajectory (client contract §5.4 `trajectory_summary`,
`file_versions`, model-call records and their summary; §5.8 `_trajectory.jsonl`): pure functions of the text,
as the official client computes them."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ADAPTER_CLASS = "CLIAgentAdapter"  # the official client's adapter name, in provenance and call records

# --- what the agent did (contract §5.4 `trajectory_summary`, `file_versions`; §5.8 `_trajectory.jsonl`) ---

TRAJECTORY_FILE = "_trajectory.jsonl"
LOG_TAIL_CHARS = 1 << 20
"""Of stdout and of stderr each, in `agent_output.log`: the sidecar files keep everything, and a
result.json over the Portal's per-file cap (8 MiB) would refuse the whole bundle."""
_EDIT_TOOLS = ("Write", "Edit", "NotebookEdit", "write", "edit", "patch")
_SHELL_TOOLS = ("Bash", "command_execution", "shell", "bash")
# The tool arguments a tool_call step keeps: what the call acted on (as the official client keeps them).
KEY_ARG_NAMES = ("file_path", "filename", "path", "output_dir", "command", "pattern", "url")


def log_tail(text: str) -> str:
    if len(text) <= LOG_TAIL_CHARS:
        return text
    return f"[… {len(text) - LOG_TAIL_CHARS} earlier characters are in the raw log file]\n" + text[-LOG_TAIL_CHARS:]


def _short_hash(data: bytes) -> str:
    # 16 hex characters, as the official client's file history records them.
    return hashlib.sha256(data).hexdigest()[:16]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _timestamp_ms(event: dict[str, Any]) -> int | None:
    try:
        seconds = float(event["timestamp"])
    except (KeyError, TypeError, ValueError):
        return None
    return int(seconds * 1000) if math.isfinite(seconds) and abs(seconds) < 1e15 else None


def _events(jsonl: str) -> Iterable[tuple[int, str, Any]]:
    """(index among the non-blank lines, the line, its JSON or _MALFORMED) of a JSONL trajectory."""
    for index, line in enumerate(line.strip() for line in jsonl.splitlines() if line.strip()):
        try:
            yield index, line, json.loads(line)
        except ValueError:
            yield index, line, _MALFORMED


_MALFORMED = object()


def _blocks(event: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    message = event.get("message")
    if not isinstance(message, dict):
        return {}, []
    content = message.get("content")
    return message, [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _tool_result(block: dict[str, Any], tools: dict[str, str]) -> tuple[str, dict[str, Any]]:
    inner = block.get("content", "")
    types: list[str] = []
    media: list[str] = []
    if isinstance(inner, list):
        parts = []
        for item in (i for i in inner if isinstance(i, dict)):
            kind = _text(item.get("type", ""))
            types.append(kind)
            if kind == "text":
                parts.append(_text(item.get("text", "")))
            elif kind == "image":
                source = item["source"] if isinstance(item.get("source"), dict) else {}
                media.append(_text(source.get("media_type") or item.get("media_type") or item.get("mimeType") or ""))
        text = "\n".join(parts)
    else:
        text = _text(inner)
        types.append("text")
    call_id = block.get("tool_use_id", "")
    metadata: dict[str, Any] = {"tool_call_id": call_id, "is_error": bool(block.get("is_error")),
                                "output_length": len(text), "parent_tool_name": tools.get(_text(call_id), ""),
                                "content_types": types}
    if media:
        metadata["image_media_types"] = media
    return text, metadata


def trajectory_steps(jsonl: str) -> list[dict[str, Any]]:
    """The steps of a Claude-Code-style JSONL trajectory (the schema the official client reads from
    `_trajectory.jsonl`), as the official 0.2.0 client writes them to `<stem>.trajectory.json`: one step per
    text, thinking, tool call and tool result, a synthetic turn for an assistant event that only called
    tools, and system, error, rate-limit and result events. A line that is JSON but not an object is
    skipped (the official extractor gives up on the whole trajectory there)."""
    steps: list[dict[str, Any]] = []
    tools: dict[str, str] = {}

    def add(kind: str, content: str, metadata: dict[str, Any], stamp: int | None) -> None:
        steps.append({"step_index": len(steps), "timestamp_ms": stamp, "step_type": kind, "content": content,
                      "metadata": metadata})

    for _, line, event in _events(jsonl):
        if event is _MALFORMED:
            add("error", f"Malformed JSON: {line[:200]}", {"parse_error": True}, None)
            continue
        if not isinstance(event, dict):
            continue
        stamp, kind = _timestamp_ms(event), event.get("type", "")
        if kind == "assistant":
            message, blocks = _blocks(event)
            responded = False
            for block in blocks:
                btype = block.get("type", "")
                if btype == "text":
                    responded = True
                    add("llm_response", _text(block.get("text", "")), {"role": "assistant"}, stamp)
                elif btype == "thinking":
                    responded = True
                    thought = _text(block.get("thinking", ""))
                    add("thinking", thought, {"thinking_length": len(thought)}, stamp)
                elif btype == "tool_use":
                    name, call_id = _text(block.get("name", "unknown")), block.get("id", "")
                    if call_id:
                        tools[_text(call_id)] = name
                    raw = block.get("input", {}) or {}
                    args = {k: _text(raw[k]) for k in KEY_ARG_NAMES if k in raw} if isinstance(raw, dict) else {}
                    add("tool_call", name, {"tool_name": name, "key_args": args, "tool_call_id": call_id}, stamp)
            if not responded and message.get("content"):
                add("llm_response", "", {"role": "assistant", "synthetic_turn_marker": True}, stamp)
        elif kind == "user":
            for block in _blocks(event)[1]:
                if block.get("type") == "tool_result":
                    add("tool_result", *_tool_result(block, tools), stamp)
        elif kind == "system":
            add("system", _text(event.get("message") or event.get("text") or ""),
                {"subtype": event.get("subtype", "")}, stamp)
        elif kind == "error":
            add("error", _text(event.get("message") or event.get("error") or str(event)), {}, stamp)
        elif kind in ("rate_limit_event", "rate_limit"):
            add("rate_limit", _text(event.get("message") or str(event)), {}, stamp)
        elif kind == "result":
            add("system", f"result: {event.get('subtype', '')}",
                {key: event[key] for key in ("num_turns", "usage") if key in event}, stamp)
    return steps


def trajectory_summary(steps: list[dict[str, Any]], path_of: Callable[[str], str] = str) -> dict[str, Any]:
    """The official `trajectory_summary` of `steps`: turns are text replies and synthetic turns, files
    modified those a write/edit tool call names (`path_of` maps each, e.g. to workspace-relative)."""
    turns = calls = thinking = executions = failures = 0
    tools: dict[str, int] = {}
    modified: set[str] = set()
    for step in steps:
        kind, metadata = step["step_type"], step["metadata"]
        if kind == "llm_response":
            turns += 1
        elif kind == "tool_call":
            calls += 1
            name = metadata["tool_name"]
            tools[name] = tools.get(name, 0) + 1
            args = metadata["key_args"]
            path = args.get("file_path", "") or args.get("path", "")
            if name in _EDIT_TOOLS and path:
                modified.add(path_of(path))
        elif kind == "thinking":
            thinking += len(step["content"])
        elif kind == "tool_result" and metadata["parent_tool_name"] in _SHELL_TOOLS:
            executions += 1
            failures += bool(metadata["is_error"])
    return {"total_turns": turns, "total_tool_calls": calls, "tool_call_distribution": tools,
            "thinking_total_chars": thinking, "total_code_executions": executions,
            "code_execution_failures": failures, "unique_files_modified": sorted(modified)}


def _edit_summary(old: str, new: str) -> str | None:
    if not old or not new:
        return None
    return "'{}' → '{}'".format(old[:50].replace("\n", "\\n"), new[:50].replace("\n", "\\n"))


def file_history(jsonl: str, path_of: Callable[[str], str] = str) -> dict[str, list[dict[str, Any]]]:
    """The official `file_versions` of a JSONL trajectory: a version per Write, Edit and NotebookEdit,
    numbered per file (`path_of` maps each path first), its step the event's line among the non-blank
    lines. A write's hash is of the content written; an edit's, as the official client records it, of
    "old|new" (the edit, not the file after it), its length the new text's."""
    versions: dict[str, list[dict[str, Any]]] = {}
    for index, _, event in _events(jsonl):
        if not isinstance(event, dict) or event.get("type", "") != "assistant":
            continue
        stamp = _timestamp_ms(event)
        for block in _blocks(event)[1]:
            args = block.get("input")
            name = block.get("name", "")
            if block.get("type") != "tool_use" or not isinstance(args, dict):
                continue
            diff = None
            if name == "Write":
                path, action, text = args.get("file_path", ""), "write", _text(args.get("content", ""))
                length = len(text)
            elif name == "Edit":
                old, new = _text(args.get("old_string", "")), _text(args.get("new_string", ""))
                path, action, text, length, diff = args.get("file_path", ""), "edit", f"{old}|{new}", len(new), \
                    _edit_summary(old, new)
            elif name == "NotebookEdit":
                path = args.get("notebook_path", args.get("file_path", ""))
                action, text = "notebook_edit", _text(args.get("new_source", args.get("content", "")))
                length = len(text)
            else:
                continue
            if not path:
                continue
            history = versions.setdefault(path_of(_text(path)), [])
            history.append({"version": len(history) + 1, "action": action, "step_index": index,
                            "timestamp_ms": stamp, "content_hash": _short_hash(text.encode("utf-8", "replace")),
                            "content_length": length, "diff_summary": diff})
    return versions


# --- the model calls of a trajectory, and what the agent says they cost ---------------------------------

INLINE_CALL_RECORDS = 5_000
"""Call records a result.json carries itself (the bundle holds no sidecar file, so the Portal reads them there);
a longer run keeps them in `<stem>.model_calls.json` only."""
_INCOMPLETE_FINISH = frozenset({"incomplete", "length", "max_output", "max_output_tokens", "max_tokens"})
_USAGE_KEYS = {"input_tokens": ("input_tokens", "prompt_tokens", "input"),
               "output_tokens": ("output_tokens", "completion_tokens", "output"),
               "cache_read_tokens": ("cache_read_input_tokens", "cache_read_tokens", "cache_read", "cacheRead"),
               "cache_write_tokens": ("cache_creation_input_tokens", "cache_write_tokens", "cache_write",
                                      "cacheWrite")}


def _token_count(value: Any) -> int | None:
    if type(value) is bool or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if value >= 0 else None


def _usage_counts(usage: Any) -> dict[str, int | None]:
    usage = usage if isinstance(usage, dict) else {}
    counts: dict[str, int | None] = {}
    for field_name, keys in _USAGE_KEYS.items():
        counts[field_name] = next((n for n in (_token_count(usage.get(k)) for k in keys) if n is not None), None)
    return counts


def _call_record(index: int, message: dict[str, Any], event: dict[str, Any], model: str | None) -> dict[str, Any]:
    blocks = [b for b in message.get("content") or [] if isinstance(b, dict)]
    texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
    state = "nonempty" if any(texts) else "omitted" if any(b.get("type") != "text" for b in blocks) else "empty"
    finish = message.get("stop_reason") or message.get("stopReason")
    finish = str(finish) if finish else None
    counts = _usage_counts(message.get("usage"))
    known = counts["input_tokens"] is not None and counts["output_tokens"] is not None
    incomplete = finish is not None and finish.lower() in _INCOMPLETE_FINISH
    outcome = ("incomplete_response" if incomplete else {"empty": "complete_empty_response",
               "nonempty": "complete_nonempty_response", "omitted": "complete_tool_only_response"}[state])
    stamp = event.get("timestamp")
    return {"schema_version": 1, "call_index": index, "attempted": True, "adapter": ADAPTER_CLASS,
            "model": str(message.get("model") or model or "") or None, "boundary_kind": "assistant_message",
            "response_id": str(message["id"]) if message.get("id") else None, "response_received": True,
            "content_state": state, "outcome": outcome, "finish_reason": finish, **counts,
            "token_count": counts["input_tokens"] + counts["output_tokens"] if known else None,  # type: ignore[operator]
            "cost_usd": None, "started_at": str(stamp) if stamp is not None else None,
            "retry_index": 0, "evidence_status": "complete"}


def model_call_records(jsonl: str, model: str | None = None) -> list[dict[str, Any]]:
    """One record per model call of a Claude-Code-style JSONL trajectory, in the official client's
    ModelCallRecord fields (schema 1). As in the official parser an assistant event is a completion, with
    its message's `usage` (Anthropic's cache tokens as `cache_read_tokens` / `cache_write_tokens`) and model
    (else `model`, the run's). Unlike it, the events of one message (Claude Code writes one per content block,
    each repeating the message's id and usage) are one call, so no call is counted, or billed, twice. Malformed
    lines make one gap record (`attempted` null): calls may hide there, so their number is unknown."""
    messages: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (the message so far, its first event)
    by_id: dict[str, int] = {}
    malformed = 0
    for _, _, event in _events(jsonl):
        if event is _MALFORMED or not isinstance(event, dict):
            malformed += 1
            continue
        if event.get("type") != "assistant":
            continue
        message = event["message"] if isinstance(event.get("message"), dict) else {}
        message_id = str(message["id"]) if message.get("id") else None
        if message_id is not None and message_id in by_id:
            position = by_id[message_id]
            earlier, first = messages[position]
            # The later event's usage is the message's latest; its blocks add to the earlier ones.
            merged = {**earlier, **message, "content": [*_content(earlier), *_content(message)]}
            messages[position] = (merged, first)
            continue
        if message_id is not None:
            by_id[message_id] = len(messages)
        messages.append((message, event))
    calls = [_call_record(index, message, event, model) for index, (message, event) in enumerate(messages, 1)]
    if malformed:
        calls.append({"schema_version": 1, "call_index": len(calls) + 1, "attempted": None, "adapter": ADAPTER_CLASS,
                      "model": model, "boundary_kind": "unobservable", "outcome": "no_observable_boundary",
                      "content_state": "unknown", "error_type": "parse_error", "parse_error_count": malformed,
                      "evidence_status": "not_observed",
                      "evidence_reason": "malformed_jsonl_may_hide_call_boundaries"})
    return calls


def _content(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def agent_stated_cost(jsonl: str) -> dict[str, Any] | None:
    """The result's `cost` block (the official client's CostInfo) from the agent's last `result` event, as the
    official Claude Code adapter reads it: the agent's own totals of input and output tokens, and, where the
    agent states it (`total_cost_usd`), its cost; null there when it states none (the official client writes 0)."""
    stated = None
    for _, _, event in _events(jsonl):
        if isinstance(event, dict) and event.get("type") == "result" and isinstance(event.get("usage"), dict):
            stated = event
    if stated is None:
        return None
    counts = _usage_counts(stated["usage"])
    fresh, out = counts["input_tokens"] or 0, counts["output_tokens"] or 0
    usd = stated.get("total_cost_usd", stated.get("cost_usd"))
    usd = float(usd) if isinstance(usd, (int, float)) and type(usd) is not bool and math.isfinite(usd) and usd > 0 \
        else None
    return {"input_tokens": fresh, "output_tokens": out, "total_tokens": fresh + out, "estimated_cost_usd": usd}


def summarize_model_calls(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The official client's `summarize_model_calls`: counts over the records, never a made-up denominator."""
    attempted = [r for r in records if r.get("attempted") is True]
    unobserved = [r for r in records if r.get("attempted") is None]
    states = Counter(r.get("content_state") for r in attempted)
    known_states = states["empty"] + states["nonempty"] + states["omitted"]
    summary: dict[str, Any] = {
        "call_records_emitted": len(records),
        "calls_attempted": len(attempted) if not unobserved else None,
        "calls_attempted_observed": len(attempted),
        "calls_with_response": sum(1 for r in attempted if r.get("response_received")),
        "calls_with_nonempty_content": states["nonempty"],
        "calls_with_empty_content": states["empty"],
        "calls_with_omitted_content": states["omitted"],
        "calls_with_known_content_state": known_states,
        "calls_with_unknown_content_state": len(attempted) - known_states,
        "calls_with_partial_content": sum(1 for r in attempted if r.get("partial_content")
                                          or r.get("outcome") == "partial_response"),
        "calls_with_transport_error": sum(1 for r in attempted if r.get("outcome") in
                                          ("transport_error", "process_failure", "request_sent_no_response")),
        "calls_with_timeout": sum(1 for r in attempted if r.get("outcome") == "timeout"),
        "calls_retried": sum(1 for r in attempted if int(r.get("retry_index") or 0) > 0
                             or r.get("benchmark_attempt_kind") == "failure_retry"),
        "calls_without_observable_boundary": len(unobserved),
    }
    observed = bool(attempted) and not unobserved and summary["calls_with_unknown_content_state"] == 0
    summary["empty_response_rate"] = states["empty"] / len(attempted) if observed else None
    summary["empty_response_rate_status"] = "observed" if observed else "unknown"
    if not observed:
        summary["reason"] = ("one_or_more_call_boundaries_were_not_observable" if unobserved else
                             "no_attempted_calls_were_observed" if not attempted else
                             "one_or_more_calls_have_unknown_content_state")
    return summary


@dataclass(frozen=True)
class Trajectory:
    steps: list[dict[str, Any]]
    summary: dict[str, Any] | None  # None for an empty trajectory, as the official client records it
    file_versions: dict[str, list[dict[str, Any]]]
    calls: list[dict[str, Any]] = field(default_factory=list)  # model_call_records
    stated_cost: dict[str, Any] | None = None  # agent_stated_cost


def trajectory_of(jsonl: str, workspace: Path, model: str | None = None) -> Trajectory:
    """Steps, summary, file history, model calls and stated cost of the JSONL an agent left in `workspace`
    (`model`: the run's, for calls whose event names none), with the paths inside the workspace relative
    (the official client keeps them absolute: a host path, and not the name the task declares; relative, a
    file's history and its `final` version share one key)."""
    prefixes = tuple(f"{p}/" for p in {str(workspace), str(workspace.resolve())})

    def relative(path: str) -> str:
        return next((path[len(p):] for p in prefixes if path.startswith(p)), path)

    steps = trajectory_steps(jsonl)
    return Trajectory(steps=steps, summary=trajectory_summary(steps, relative) if jsonl.strip() else None,
                      file_versions=file_history(jsonl, relative), calls=model_call_records(jsonl, model),
                      stated_cost=agent_stated_cost(jsonl))


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
