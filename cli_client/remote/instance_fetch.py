"""Fetch dataset instances from a Portal into the instance layout of client contract §6."""

import hashlib
import json
import shutil
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_client.context import CliContext
from cli_client.errors import CliError
from contracts.archives import UnsafeArchive, extract_tree
from contracts.digests import tree_hashes

MARKER = ".asibench-pull.json"
DOWNLOAD_ATTEMPTS = 3
CHUNK = 1 << 20


@dataclass
class PullOutcome:
    instance_id: str
    action: str  # downloaded | skipped | repaired
    bytes: int = 0


def _tree_hashes(root: Path) -> dict[str, str]:
    return tree_hashes(root, skip=lambda path: path.name == MARKER)


def instance_intact(directory: Path, expected_archive_sha: str) -> bool:
    """True when a pulled instance is complete and unchanged since it was pulled."""
    try:
        marker = json.loads((directory / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return marker.get("archive_sha256") == expected_archive_sha and marker.get("files") == _tree_hashes(directory)


def list_instances(ctx: CliContext, api_base: str, repo: str, task_ids: list[str]) -> list[dict[str, Any]]:
    params = {"tasks": ",".join(task_ids)} if task_ids else None
    body = ctx.json("GET", f"{api_base}/datasets/{repo}/instances", params=params, timeout=60)
    return list(body.get("instances") or [])


def _download(ctx: CliContext, url: str, dest: Path, expected_sha: str, on_bytes: Callable[[int], None]) -> int:
    last_error = ""
    for _attempt in range(DOWNLOAD_ATTEMPTS):
        digest = hashlib.sha256()
        size = 0
        response = ctx.request("GET", url, timeout=300, stream=True)
        with dest.open("wb") as handle:
            for chunk in response.iter_content(CHUNK):
                handle.write(chunk)
                digest.update(chunk)
                size += len(chunk)
                on_bytes(len(chunk))
        if digest.hexdigest() == expected_sha:
            return size
        last_error = f"sha256 mismatch (got {digest.hexdigest()[:12]}…, expected {expected_sha[:12]}…)"
    dest.unlink(missing_ok=True)
    raise CliError(f"Download of {url} failed {DOWNLOAD_ATTEMPTS} times: {last_error}")


def _extract(archive: Path, instance_id: str, staging: Path) -> Path:
    with tarfile.open(archive, "r:gz") as tar:
        tops = {m.name.split("/", 1)[0] for m in tar.getmembers()}
        if tops != {instance_id}:
            raise CliError(f"Archive for {instance_id} has an unexpected layout (top-level: {sorted(tops)}).")
        try:
            extract_tree(tar, staging)
        except UnsafeArchive as exc:
            raise CliError(f"Archive for {instance_id} was not unpacked: {exc}") from exc
    return staging / instance_id


def pull_instance(
    ctx: CliContext, entry: dict[str, Any], output_dir: Path, overwrite: bool, on_bytes: Callable[[int], None]
) -> PullOutcome:
    instance_id = entry["instance_id"]
    target = output_dir / instance_id
    existed = target.exists()
    if existed and not overwrite and instance_intact(target, entry["sha256"]):
        return PullOutcome(instance_id, "skipped")
    partial = output_dir / f".partial-{instance_id}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        archive = partial / "archive.tar.gz"
        size = _download(ctx, entry["download_url"], archive, entry["sha256"], on_bytes)
        extracted = _extract(archive, instance_id, partial / "tree")
        marker = {"archive_sha256": entry["sha256"], "dataset": entry.get("dataset"), "files": _tree_hashes(extracted)}
        (extracted / MARKER).write_text(json.dumps(marker, indent=2, sort_keys=True), encoding="utf-8")
        # Swap in atomically so an interrupted pull never leaves a half-written instance.
        if existed:
            old = output_dir / f".old-{instance_id}"
            shutil.rmtree(old, ignore_errors=True)
            target.rename(old)
            extracted.rename(target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            extracted.rename(target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return PullOutcome(instance_id, "repaired" if existed and not overwrite else "downloaded", size)
