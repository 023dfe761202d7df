"""SHA-256 of bytes, files and trees: the one definition every side (client, Portal, scoring) hashes with."""

import hashlib
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
