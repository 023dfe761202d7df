"""SHA-256 of bytes, files and trees: the one definition every side (client, Portal, scoring) hashes with."""

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import IO

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


# The determinism rule, shared by `asibench validate --pre-submit` and the catalog: two runs of a
# generator with the same parameters must write the same bytes in every file (data/, reference/,
# rendered prompts, anything else), except instance_meta.json, which must agree once these
# top-level bookkeeping keys are left out: official generators record how long they took there.
VOLATILE_INSTANCE_META_KEYS = frozenset({
    "generation_time_seconds", "generation_time", "elapsed_seconds", "wall_time_seconds",
    "generated_at", "timestamp", "hostname",
})
INSTANCE_META = "instance_meta.json"


def instance_meta_digest(path: Path) -> str:
    """sha256 of instance_meta.json without its volatile keys (of its bytes when it is not a JSON object)."""
    raw = Path(path).read_bytes()
    try:
        meta = json.loads(raw)
    except ValueError:
        return sha256_bytes(raw)
    if not isinstance(meta, dict):
        return sha256_bytes(raw)
    stable = {k: v for k, v in meta.items() if k not in VOLATILE_INSTANCE_META_KEYS}
    return sha256_bytes(json.dumps(stable, sort_keys=True).encode())


def determinism_hashes(root: Path, skip: Callable[[Path], bool] = lambda _: False) -> dict[str, str]:
    """tree_hashes of a generated instance under the determinism rule above."""
    hashes = tree_hashes(root, skip)
    if INSTANCE_META in hashes:
        hashes[INSTANCE_META] = instance_meta_digest(Path(root) / INSTANCE_META)
    return hashes
