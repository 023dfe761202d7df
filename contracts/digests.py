"""SHA-256 of bytes, files and trees: the one definition every side (client, Portal, scoring) hashes with."""

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

_CHUNK = 1 << 20


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_stream(handle: IO[bytes]) -> tuple[str, int]:
    """Digest and size of a seekable stream, read in chunks from the start; leaves it rewound."""
    handle.seek(0)
    digest, size = hashlib.sha256(), 0
    while chunk := handle.read(_CHUNK):
        digest.update(chunk)
        size += len(chunk)
    handle.seek(0)
    return digest.hexdigest(), size


def tree_hashes(root: Path, skip: Callable[[Path], bool] = lambda _: False) -> dict[str, str]:
    """sha256 of every regular file below root, keyed by POSIX relative path, minus `skip`ped ones."""
    return {
        path.relative_to(root).as_posix(): sha256_file(path)
        for path in sorted(root.rglob("*"))
        if path.is_file() and not skip(path)
    }


# What the agent is given (client contract §5.8): the prompts and data/. task_info.json is left out
# because the runner regenerates it; references and parameters are never the agent's to see.
INPUT_DIGEST_SCHEME = "asibench-inputs-v1"


def is_agent_input(relative_path: str) -> bool:
    parts = relative_path.split("/")
    return (parts[0] == "data" and len(parts) > 1) or (
        len(parts) == 1 and parts[0].startswith("prompt_b") and parts[0].endswith(".md"))


def input_digest(file_hashes: dict[str, str]) -> str:
    """Digest of an instance's agent inputs from its {relative path: sha256} (other paths ignored).

    The one definition the Portal (from an instance archive) and `asibench run` (from a pulled
    instance directory) both use, so equal inputs give equal digests whichever client pulled them.
    """
    chosen = sorted((path, digest) for path, digest in file_hashes.items() if is_agent_input(path))
    return sha256_bytes(json.dumps([INPUT_DIGEST_SCHEME, chosen], separators=(",", ":")).encode())


def instance_dir_input_digest(instance_dir: Path) -> str:
    root = Path(instance_dir)
    return input_digest(tree_hashes(root, skip=lambda path: not is_agent_input(path.relative_to(root).as_posix())))


# The determinism rule, shared by `asibench validate --pre-submit` and the catalog: two runs of a
# generator with the same parameters must write the same bytes in every file (data/, reference/,
# rendered prompts, anything else), except the JSON files that carry bookkeeping: instance_meta.json
# and the .json files under reference/ must agree once these keys are left out, at any depth of
# their objects. Official generators record how long they took there (`generation_time_seconds` in
# instance_meta.json, `generation_seconds` in a reference diagnostics file).
VOLATILE_TIMING_KEYS = frozenset({
    "generation_time_seconds", "generation_seconds", "generation_time", "elapsed_seconds",
    "wall_time_seconds", "generated_at", "timestamp", "hostname",
})
INSTANCE_META = "instance_meta.json"


def has_volatile_keys(relative_path: str) -> bool:
    """Whether the determinism rule compares this file of an instance without its volatile keys."""
    parts = relative_path.split("/")
    return relative_path == INSTANCE_META or (parts[0] == "reference" and len(parts) > 1
                                              and parts[-1].endswith(".json"))


def _without_volatile(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_volatile(v) for k, v in value.items() if k not in VOLATILE_TIMING_KEYS}
    if isinstance(value, list):
        return [_without_volatile(v) for v in value]
    return value


def stable_json_digest(path: Path) -> str:
    """sha256 of a JSON file without its volatile keys at any depth (of its bytes when it is not JSON)."""
    raw = Path(path).read_bytes()
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return sha256_bytes(raw)
    return sha256_bytes(json.dumps(_without_volatile(data), sort_keys=True).encode())


def determinism_hashes(root: Path, skip: Callable[[Path], bool] = lambda _: False) -> dict[str, str]:
    """tree_hashes of a generated instance under the determinism rule above."""
    hashes = tree_hashes(root, skip)
    for relative in hashes:
        if has_volatile_keys(relative):
            hashes[relative] = stable_json_digest(Path(root) / relative)
    return hashes
