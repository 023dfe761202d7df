"""What an operator does to the Portal's storage as a whole: create its bucket, and copy everything in it
out to a directory and back (the storage half of a backup; docs/operators.md, "Backup and restore").

Everything goes through Django's default storage, so the same commands serve the S3 bucket and the
filesystem storage of `make run`, and a copy made from one restores into the other."""

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from botocore.exceptions import BotoCoreError, ClientError
from django.core.files import File
from django.core.files.storage import Storage, default_storage

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
OBJECTS_DIR = "objects"
CHUNK = 1 << 20
PUBLIC_GRANTEES = ("http://acs.amazonaws.com/groups/global/AllUsers",
                   "http://acs.amazonaws.com/groups/global/AuthenticatedUsers")


class StorageOpError(Exception):
    """What went wrong, in words an operator can act on."""


def _is_s3(storage: Storage) -> bool:
    return hasattr(storage, "bucket_name") and hasattr(storage, "connection")


def bucket_ensure(*, wait_seconds: float = 0, storage: Storage | None = None,
                  sleep: Callable[[float], None] = time.sleep) -> str:
    """Create the configured bucket if it is missing; "created", "exists" or "filesystem" (nothing to do).
    Connection errors are retried for `wait_seconds` (S3 may still be starting next to us)."""
    storage = storage or default_storage
    if not _is_s3(storage):
        return "filesystem"
    client = storage.connection.meta.client  # type: ignore[attr-defined]
    bucket = storage.bucket_name  # type: ignore[attr-defined]
    deadline = time.monotonic() + wait_seconds
    while True:
        try:
            state = _bucket_create_if_missing(client, bucket)
            break
        except (BotoCoreError, ClientError) as exc:
            if isinstance(exc, ClientError) and _error_code(exc) not in ("503", "ServiceUnavailable", "SlowDown"):
                raise StorageOpError(_client_error_text(exc, bucket)) from None
            if time.monotonic() >= deadline:
                raise StorageOpError(f"S3 at {client.meta.endpoint_url} did not answer: {exc}") from None
            logger.info("waiting for S3 at %s: %s", client.meta.endpoint_url, exc)
            sleep(1)
    _bucket_check_private(client, bucket)
    return state


def _error_code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _client_error_text(exc: ClientError, bucket: str) -> str:
    code = _error_code(exc)
    if code in ("403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
        return (f"S3 refused these credentials for bucket {bucket!r} ({code}): check ASIBENCH_S3_ACCESS_KEY_ID and "
                "ASIBENCH_S3_SECRET_ACCESS_KEY, or the bucket belongs to another account")
    return f"S3 refused to create or read bucket {bucket!r}: {exc}"


def _bucket_create_if_missing(client, bucket: str) -> str:  # noqa: ANN001
    try:
        client.head_bucket(Bucket=bucket)
        return "exists"
    except ClientError as exc:
        if _error_code(exc) not in ("404", "NoSuchBucket", "NotFound"):
            raise
    region = client.meta.region_name
    if region and region != "us-east-1":
        client.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
    else:
        client.create_bucket(Bucket=bucket)
    return "created"


def _bucket_check_private(client, bucket: str) -> None:  # noqa: ANN001
    """A bucket anyone may read would publish every private reference: refuse to go on with one."""
    try:
        grants = client.get_bucket_acl(Bucket=bucket).get("Grants", [])
    except ClientError as exc:
        if _error_code(exc) in ("NotImplemented", "501"):
            logger.warning("S3 does not report bucket ACLs (%s); the bucket is assumed private", exc)
            return
        raise StorageOpError(f"could not read the ACL of bucket {bucket!r}: {exc}") from None
    public = [g for g in grants if g.get("Grantee", {}).get("URI") in PUBLIC_GRANTEES]
    if public:
        raise StorageOpError(f"bucket {bucket!r} grants {[g['Permission'] for g in public]} to everyone; "
                             "the Portal keeps private references there: make it private first")


# ---------------------------------------------------------------- export and import
@dataclass(frozen=True)
class CopyReport:
    files: int
    bytes: int
    skipped: int = 0


def _names(storage: Storage, directory: str = "") -> Iterator[str]:
    dirs, files = storage.listdir(directory)
    for name in sorted(files):
        yield f"{directory}/{name}" if directory else name
    for sub in sorted(dirs):
        yield from _names(storage, f"{directory}/{sub}" if directory else sub)


def _safe_relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise StorageOpError(f"refusing the object name {name!r}: not a plain relative path")
    return path


def _copy_hashed(source, target) -> tuple[str, int]:  # noqa: ANN001
    digest, size = hashlib.sha256(), 0
    while chunk := source.read(CHUNK):
        digest.update(chunk)
        size += len(chunk)
        target.write(chunk)
    return digest.hexdigest(), size


def storage_export(*, dest: Path, storage: Storage | None = None) -> CopyReport:
    """Every object of the storage into `dest/objects/<name>`, with `dest/manifest.json` listing each
    name, size and SHA-256. `dest` must be empty or absent: an export never mixes with an older one."""
    storage = storage or default_storage
    if dest.exists() and any(dest.iterdir()):
        raise StorageOpError(f"{dest} is not empty: export into a new directory")
    (dest / OBJECTS_DIR).mkdir(parents=True, exist_ok=True)
    os.chmod(dest, 0o700)  # private references and bundles: the operator's eyes only
    manifest: dict[str, dict[str, int | str]] = {}
    total = 0
    for name in _names(storage):
        target = dest / OBJECTS_DIR / _safe_relative(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        with storage.open(name, "rb") as source, open(target, "wb") as out:
            sha256, size = _copy_hashed(source, out)
        manifest[name] = {"size": size, "sha256": sha256}
        total += size
    (dest / MANIFEST).write_text(json.dumps({"objects": manifest}, indent=1, sort_keys=True))
    return CopyReport(files=len(manifest), bytes=total)


def storage_import(*, source: Path, storage: Storage | None = None) -> CopyReport:
    """Put an export back: every file is checked against the manifest before it is stored under its
    own name. An object already there with the same content is skipped; one with other content stops
    the import (restore into an empty bucket, or one this export was made from)."""
    storage = storage or default_storage
    try:
        manifest = json.loads((source / MANIFEST).read_text())["objects"]
    except (OSError, ValueError, KeyError) as exc:
        raise StorageOpError(f"{source / MANIFEST} is not an export's manifest: {exc}") from None
    stored = skipped = total = 0
    for name, expected in sorted(manifest.items()):
        path = source / OBJECTS_DIR / _safe_relative(name)
        with open(path, "rb") as handle:
            sha256, size = _copy_hashed(handle, _Discard())
        if (sha256, size) != (expected["sha256"], expected["size"]):
            raise StorageOpError(f"{path} does not match the manifest (sha256 {sha256}, expected {expected['sha256']})")
        if storage.exists(name):
            with storage.open(name, "rb") as present:
                if _copy_hashed(present, _Discard())[0] == sha256:
                    skipped += 1
                    continue
            raise StorageOpError(f"{name!r} is already in the storage with other content: import into an empty one")
        with open(path, "rb") as handle:
            saved = storage.save(name, File(handle, name=name))
        if saved != name:
            storage.delete(saved)
            raise StorageOpError(f"the storage stored {name!r} as {saved!r}; nothing else was changed for it")
        stored += 1
        total += size
    return CopyReport(files=stored, bytes=total, skipped=skipped)


class _Discard:
    def write(self, data: bytes) -> None:
        pass
