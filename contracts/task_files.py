"""The file rules of a task proposal, shared by `asibench task submit` and the Portal.

Client contract §4.2–§4.3: which files of a task directory are sent, how their names are
normalised, the extension/size/count limits, the snapshot token and the OS-sandbox evidence
rule for `task_submission.yaml`. Pure Python: no Django, no network.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ALLOWED_EXTENSIONS = frozenset({".py", ".md", ".yaml", ".yml", ".txt", ".npy", ".dat", ".csv", ".json"})
IGNORED_PARTS = frozenset({
    ".git", ".asibench", ".ai4sci-bench", "__pycache__", "node_modules",
    "venv", ".venv", "results", "instances", "reference",
})
MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_TASK_FILES = 1000
MAX_TASK_BYTES = 100 * 1024 * 1024
MAX_NAME_CHARS = 255
# The official client accepts ids without a domain; the Portal's catalog needs `domain.name`.
CLIENT_TASK_ID_RE = re.compile(r"^[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)?$")
PORTAL_TASK_ID_RE = re.compile(r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")
METADATA_FILES = ("task_meta.yaml", "task.yaml", "task.yml")
SUBMISSION_FILE = "task_submission.yaml"
MULTI_TURN_AGENTS = frozenset({
    "antigravity_cli", "claude_code_cli", "codewhale", "codex_cli", "hermes",
    "kimi_code_cli", "mimo_code_cli", "openhands", "opencode_cli", "pi_cli",
})


class TaskFileError(ValueError):
    """A file or file set that breaks a rule; `code` names the rule for API answers."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def normalise_name(name: str) -> str:
    """The NFC, POSIX relative name the Portal stores, or TaskFileError(code="bad_path")."""
    name = unicodedata.normalize("NFC", name)
    if not name or len(name) > MAX_NAME_CHARS:
        raise TaskFileError(f"Task-relative path must contain 1-{MAX_NAME_CHARS} characters: {name[:80]!r}",
                            "bad_path")
    if any(ord(char) < 32 or ord(char) == 127 for char in name):
        raise TaskFileError(f"Task-relative path contains control characters: {name!r}", "bad_path")
    if "\\" in name or any(part in {"", ".", ".."} for part in name.split("/")):
        raise TaskFileError(f"Task-relative path is not portable: {name!r}", "bad_path")
    return name


def is_ignored(parts: Iterable[str]) -> bool:
    """True for paths the client never sends: any hidden or ignored component (file name included)."""
    return any(part.startswith(".") or part in IGNORED_PARTS for part in parts)


def check_extension(name: str) -> None:
    suffix = Path(name).suffix.lower()
    if suffix not in ALLOWED_EXTENSIONS:
        raise TaskFileError(f"Task file type {suffix or '(none)'} is not supported: {name}", "file_type")


def check_incoming_name(raw: str) -> str:
    """Server side: one received file name, normalised; ignored paths are refused, not skipped."""
    name = normalise_name(raw)
    if is_ignored(name.split("/")):
        raise TaskFileError(f"Hidden and ignored paths (.*, results/, reference/, __pycache__/ …) "
                            f"are not part of a task: {name}", "bad_path")
    check_extension(name)
    return name


def check_file_set(sizes: Mapping[str, int]) -> None:
    """The per-file, count and total limits over a whole set {name: bytes}."""
    for name, size in sizes.items():
        if size > MAX_FILE_BYTES:
            raise TaskFileError(f"Task file exceeds {MAX_FILE_BYTES} bytes: {name}", "file_too_large")
    if len(sizes) > MAX_TASK_FILES:
        raise TaskFileError(f"A Task may contain at most {MAX_TASK_FILES} uploaded files", "too_many_files")
    if sum(sizes.values()) > MAX_TASK_BYTES:
        raise TaskFileError(f"Task files may total at most {MAX_TASK_BYTES} bytes", "set_too_large")


@dataclass(frozen=True)
class LocalFile:
    name: str
    path: Path


def collect_task_files(task_dir: Path) -> list[LocalFile]:
    """Client side: the exact file set `task submit` sends, in sorted order (contract §4.3)."""
    root = Path(task_dir).resolve()
    if not root.is_dir():
        raise TaskFileError(f"Task directory not found: {root}", "not_found")
    out: list[LocalFile] = []
    seen: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if is_ignored(relative.parts):
            continue
        name = normalise_name(relative.as_posix())
        if path.is_symlink():
            raise TaskFileError(f"Task files may not be symlinks: {name}", "symlink")
        if not path.is_file():
            continue
        check_extension(name)
        if name in seen:
            raise TaskFileError(f"Task paths collide after normalization: {seen[name]} and {path}", "collision")
        seen[name] = path
        out.append(LocalFile(name, path))
    check_file_set({f.name: f.path.stat().st_size for f in out})
    return out


def snapshot_token(files: Mapping[str, str]) -> str:
    """64 hex chars identifying a file set {name: sha256}; the empty set has a token too."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode("utf-8") + b"\0" + files[name].encode("ascii") + b"\n")
    return digest.hexdigest()


def os_evidence_error(evidence: Any) -> str | None:
    """Client contract §4.2 on a parsed `task_submission.yaml`: None, or the first violation."""
    if not isinstance(evidence, dict):
        return "task_submission.yaml must contain a YAML mapping"
    if evidence.get("local_testing_done") is not True:
        return "task_submission.yaml must set local_testing_done: true after an OS-sandbox difficulty check."
    results = evidence.get("local_test_results")
    if not isinstance(results, list) or not results:
        return "task_submission.yaml must include at least one local_test_results entry produced with `--sandbox os`."
    for index, result in enumerate(results):
        if not isinstance(result, dict) or result.get("sandbox") != "os":
            return (f"task_submission.yaml local_test_results[{index}] must set sandbox: os; Task contribution "
                    "evidence must be produced with `asibench difficulty-check --sandbox os`.")
        agent = result.get("agent")
        if not isinstance(agent, str) or not agent.strip():
            return f"task_submission.yaml local_test_results[{index}] must record the explicit difficulty-check agent."
    if not any(result.get("agent") in MULTI_TURN_AGENTS for result in results):
        return ("task_submission.yaml must include at least one local_test_results entry from a supported "
                "multi-turn agent harness; direct_llm may only be recorded as an additional single-turn baseline.")
    return None


def score_problem(level: str, value: Any) -> str | None:
    """Why a recorded B-level score is unusable (missing, not a number, non-finite, outside 0–100)."""
    if value is None or value == "":
        return f"no {level.upper()} score"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"the {level.upper()} score {value!r} is not a number"
    if not math.isfinite(value):
        return f"the {level.upper()} score {value} is not finite"
    if not 0 <= value <= 100:
        return f"the {level.upper()} score {value:g} is outside 0–100"
    return None
