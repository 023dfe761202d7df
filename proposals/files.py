"""Proposal file bytes in Django storage and the fields a synced task directory provides.

Blobs are content-addressed per proposal (`proposals/<id>/blobs/<sha256>`): an unchanged
file keeps its blob across syncs and revisions, and a blob is never rewritten in place.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import IO, Any

import yaml
from django.core.files import File
from django.core.files.storage import default_storage

from contracts import PROMPT_LEVELS
from contracts.task_files import MULTI_TURN_AGENTS, SUBMISSION_FILE
from scoring.engine.safe_yaml import YAMLRefused, untrusted_yaml_load
from scoring.engine.taskdef import mapping_at


@dataclass(frozen=True)
class IncomingFile:
    """A checked file waiting to be stored: normalised name, an open binary handle, size, sha256."""

    name: str
    handle: IO[bytes]
    size: int
    sha256: str


def blob_prefix(proposal_id: object) -> str:
    return f"proposals/{proposal_id}/blobs"


def blob_store(proposal_id: object, incoming: IncomingFile) -> tuple[str, bool]:
    """(storage name, newly written). Callers hold the proposal's row lock."""
    name = f"{blob_prefix(proposal_id)}/{incoming.sha256}"
    if default_storage.exists(name):
        return name, False
    incoming.handle.seek(0)
    return default_storage.save(name, File(incoming.handle, name=incoming.sha256)), True


def blob_read(name: str) -> bytes:
    with default_storage.open(name, "rb") as handle:
        return handle.read()


def blobs_delete(names: Iterable[str]) -> None:
    for name in names:
        try:
            default_storage.delete(name)
        except OSError:  # a leftover blob costs space, never correctness
            pass


# ------------------------------------------------------------------ imported fields
# The one rule between the guided flow's forms and the task files: the files are the task, so a draft
# field a file sets comes from the file (on every upload or sync) and cannot be typed over while the
# file sets it; a field no file sets is the author's to type. These are the fields each file can set.
META_FILES = ("task_meta.yaml", "task.yaml", "task.yml")
FILE_FIELDS = {
    "task_meta.yaml": ("name", "domain", "subdomain", "source_paper", "source_repo", "inputs", "outputs"),
    SUBMISSION_FILE: ("objective", "core_method", "local_testing_done", "test_provider", "test_model", "test_agent",
                      "test_sandbox", "score_b1", "score_b2", "score_b3", "score_b4"),
}
# The files a draft's fields are read from; their YAML is parsed on every sync and page view.
PARSED_FILES = ("task_meta.yaml", "task.yaml", "task.yml", "task_eval.yaml", SUBMISSION_FILE)
# The longest free text a sync imports into a field without its own column limit.
IMPORTED_TEXT_LIMIT = 20_000
IMPORTED_FILE_ENTRIES = 200


def _text(value: Any, limit: int = IMPORTED_TEXT_LIMIT) -> str:
    """A usable free-text value: a string of at most `limit` characters, else nothing.

    Scaffold placeholders (TODO…) count as empty. Anything else (numbers, lists, an oversized
    string) is not imported rather than stringified or cut: the author fills the field instead.
    """
    if not isinstance(value, str) or len(value) > limit:
        return ""
    text = value.strip()
    return "" if text.upper().startswith("TODO") else text


def load_yaml(data: bytes | None) -> dict[str, Any]:
    """The mapping a task file holds, or {} for anything else (bad YAML, aliases expanding beyond the
    loader's bounds, not a mapping)."""
    if data is None:
        return {}
    try:
        parsed = untrusted_yaml_load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def yaml_refused(name: str, data: bytes | None) -> YAMLRefused | None:
    """Why the portal will not parse this task file (nested too deep, too many nodes, or aliases that
    expand beyond the loader's bounds or form a cycle); None if it will."""
    if data is None or name not in PARSED_FILES:
        return None
    try:
        untrusted_yaml_load(data.decode("utf-8"))
    except YAMLRefused as exc:
        return exc
    except (UnicodeDecodeError, yaml.YAMLError):  # reported by the sandboxed validation, not here
        return None
    return None


def yaml_refusal(name: str, data: bytes | None) -> str | None:
    """`yaml_refused` as the sentence shown to the author, naming the file."""
    refused = yaml_refused(name, data)
    return f"{name}: {refused}" if refused is not None else None


def _describe_files(section: Any) -> str:
    files = section.get("files") if isinstance(section, dict) else None
    lines = []
    for entry in files[:IMPORTED_FILE_ENTRIES] if isinstance(files, list) else []:
        name = _text(entry.get("name"), 255) if isinstance(entry, dict) else ""
        if name:
            kind = f" ({_text(entry.get('type'), 50)})" if _text(entry.get("type"), 50) else ""
            description = f": {_text(entry.get('description'), 2000)}" if _text(entry.get("description"), 2000) else ""
            lines.append(f"{name}{kind}{description}")
    return "\n".join(lines)


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _best_entry(results: Any) -> dict[str, Any]:
    """The local test entry to import: the first from a multi-turn harness with all four scores."""
    entries = [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []

    def levels(entry: dict[str, Any]) -> dict[str, Any]:
        return {str(r.get("prompt_level", "")).lower(): r.get("score")
                for r in entry.get("results") or [] if isinstance(r, dict)}

    def rank(entry: dict[str, Any]) -> tuple[bool, bool]:
        scores = levels(entry)
        complete = all(_score(scores.get(lv)) is not None for lv in PROMPT_LEVELS)
        return (entry.get("agent") in MULTI_TURN_AGENTS, complete)

    if not entries:
        return {}
    best = max(entries, key=rank)  # max keeps the first of equal rank
    return {**best, "_levels": levels(best)}


def imported_fields(files: dict[str, bytes]) -> tuple[dict[str, Any], dict[str, str]]:
    """Fields a synced task directory provides, and which file each came from.

    Only keys the files actually carry are returned, so a sync never blanks what the
    author typed in the browser for something the files do not say.
    """
    out: dict[str, Any] = {}
    origin: dict[str, str] = {}

    def put(field: str, value: Any, source: str) -> None:
        if value not in ("", None):
            out[field], origin[field] = value, source

    source_name = next((name for name in META_FILES if name in files), "task_meta.yaml")
    meta = load_yaml(files.get(source_name))
    if meta:
        put("name", _text(meta.get("name"), 200), source_name)
        put("domain", _text(meta.get("domain"), 50), source_name)
        put("subdomain", _text(meta.get("subdomain"), 200), source_name)
        source = mapping_at(meta, "source")
        put("source_paper", _text(source.get("paper"), 500), source_name)
        put("source_repo", _text(source.get("repo"), 500), source_name)
        put("inputs", _describe_files(meta.get("input")), source_name)
        put("outputs", _describe_files(meta.get("output")), source_name)
    evidence = load_yaml(files.get(SUBMISSION_FILE))
    if evidence:
        put("objective", _text(evidence.get("scientific_goal")), SUBMISSION_FILE)
        put("core_method", _text(evidence.get("core_method")), SUBMISSION_FILE)
        if "local_testing_done" in evidence:
            put("local_testing_done", evidence.get("local_testing_done") is True, SUBMISSION_FILE)
        entry = _best_entry(evidence.get("local_test_results"))
        if entry:
            put("test_provider", _text(entry.get("provider"), 120), SUBMISSION_FILE)
            model = " ".join(_text(entry.get(k), 120) for k in ("family", "version") if _text(entry.get(k), 120))
            put("test_model", model if len(model) <= 120 else "", SUBMISSION_FILE)
            put("test_agent", _text(entry.get("agent"), 60), SUBMISSION_FILE)
            put("test_sandbox", _text(entry.get("sandbox"), 20), SUBMISSION_FILE)
            for level in PROMPT_LEVELS:
                value = _score(entry["_levels"].get(level))
                if value is not None:
                    out[f"score_{level}"], origin[f"score_{level}"] = value, SUBMISSION_FILE
    return out, origin


def json_safe(value: Any) -> Any:
    """Fields for a JSON column: non-finite floats become strings (JSONB has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value
