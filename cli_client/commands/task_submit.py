"""`asibench task submit`: sync a local task directory as a Portal Draft (client contract §4).

Order as the official client: OS-evidence check, endpoint, token, metadata and id, file
collection — all before any network traffic — then T1 create/reuse the Draft, T2 snapshot,
T3 exact-sync PUT, T4 hash verification, T5 completeness. The CLI never submits for review:
the author does that in the browser on the Draft page.
"""

from __future__ import annotations

import mimetypes
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import yaml

from cli_client.commands.auth import validate_token
from cli_client.context import CliContext, pass_cli
from cli_client.errors import CliError, PortalHttpError
from cli_client.remote.endpoints import ENDPOINT_HELP, proposal_page_url, token_settings_url
from contracts.digests import sha256_bytes
from contracts.task_files import (
    CLIENT_TASK_ID_RE,
    METADATA_FILES,
    SUBMISSION_FILE,
    LocalFile,
    TaskFileError,
    collect_task_files,
    os_evidence_error,
)
from scoring.engine.safe_yaml import untrusted_yaml_load

UPLOAD_TIMEOUT = 300.0


@dataclass(frozen=True)
class LocalTask:
    root: Path
    task_id: str
    metadata: dict[str, Any]
    files: list[LocalFile]


def evidence_error(task_dir: Path) -> str | None:
    path = Path(task_dir).resolve() / SUBMISSION_FILE
    if not path.is_file():
        return ("task_submission.yaml is required and must record local testing performed with "
                "`asibench difficulty-check --sandbox os`.")
    try:
        evidence = untrusted_yaml_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeError, yaml.YAMLError) as exc:
        return f"Could not read task_submission.yaml: {exc}"
    return os_evidence_error(evidence)


def read_local_task(task_dir: Path) -> LocalTask:
    root = Path(task_dir).resolve()
    meta_path = next((root / n for n in METADATA_FILES if (root / n).is_file()), None)
    if meta_path is None:
        raise CliError(f"task_meta.yaml or task.yaml not found in {root}")
    try:
        metadata = untrusted_yaml_load(meta_path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeError, yaml.YAMLError) as exc:
        raise CliError(f"Could not read {meta_path.name}: {exc}") from exc
    if not isinstance(metadata, dict):
        raise CliError(f"{meta_path.name} must contain a YAML mapping")
    task_id = str(metadata.get("id") or metadata.get("task_id") or "").strip()
    if not CLIENT_TASK_ID_RE.fullmatch(task_id):
        raise CliError(f"Invalid or missing stable Task id: {task_id!r}")
    problem = evidence_error(root)
    if problem:
        raise CliError(problem)
    try:
        files = collect_task_files(root)
    except TaskFileError as exc:
        raise CliError(str(exc)) from exc
    return LocalTask(root, task_id, metadata, files)


def multipart_body(files: list[LocalFile]) -> tuple[bytes, str, dict[str, str]]:
    """(body, content type, {name: sha256}): every part named `files`, filename = relative path."""
    boundary = "----asibench" + uuid.uuid4().hex
    chunks: list[bytes] = []
    hashes: dict[str, str] = {}
    for item in files:
        data = item.path.read_bytes()
        hashes[item.name] = sha256_bytes(data)
        quoted = item.name.replace("\\", "\\\\").replace('"', '\\"')
        content_type = mimetypes.guess_type(item.name)[0] or "application/octet-stream"
        chunks += [f"--{boundary}\r\n".encode(),
                   (f'Content-Disposition: form-data; name="files"; filename="{quoted}"\r\n'
                    f"Content-Type: {content_type}\r\n\r\n").encode(),
                   data, b"\r\n"]
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}", hashes


def sync_draft(cli_ctx: CliContext, api: str, token: str, task: LocalTask, force: bool) -> tuple[str, dict[str, Any]]:
    """T1–T5; returns (proposal id, completeness). Raises CliError naming the Draft URL after T1."""
    meta = task.metadata
    created = cli_ctx.json("POST", f"{api}/cli/submit", token=token, json={
        "task_name": str(meta.get("name") or task.task_id or task.root.name)[:80],
        "task_id": task.task_id,
        "domain": str(meta.get("domain") or "other")[:50],
        "subdomain": meta.get("subdomain"),
        "prefilled": {},
    })
    proposal_id = (created.get("proposal") or {}).get("id")
    if not proposal_id:
        raise CliError(f"Portal did not return a Draft id: {created}")
    url = proposal_page_url(api, str(proposal_id))
    try:
        before = cli_ctx.json("GET", f"{api}/proposals/{proposal_id}/file-snapshot", token=token)
        snapshot = before.get("snapshot")
        if not isinstance(snapshot, str) or len(snapshot) != 64:
            raise CliError("Portal returned an invalid file snapshot token")
        body, content_type, uploaded = multipart_body(task.files)
        cli_ctx.request("PUT", f"{api}/proposals/{proposal_id}/files", token=token, timeout=UPLOAD_TIMEOUT,
                        params={"base_snapshot": snapshot, "force": str(force).lower()},
                        data=body, headers={"Content-Type": content_type}, allow_redirects=False)
        after = cli_ctx.json("GET", f"{api}/proposals/{proposal_id}/file-snapshot", token=token)
        stored = {str(i.get("file_name")): str(i.get("content_hash") or "")
                  for i in after.get("files") or [] if isinstance(i, dict) and i.get("file_name")}
        details = []
        if missing := sorted(set(uploaded) - set(stored)):
            details.append("missing: " + ", ".join(missing))
        if unexpected := sorted(set(stored) - set(uploaded)):
            details.append("unexpected: " + ", ".join(unexpected))
        if mismatched := sorted(n for n in set(uploaded) & set(stored) if stored[n] != uploaded[n]):
            details.append("content mismatch: " + ", ".join(mismatched))
        if details:
            raise CliError("The Draft was created, but exact file synchronization failed: Portal snapshot "
                           f"differs ({'; '.join(details)})\nReview the recoverable Draft: {url}")
        refreshed = cli_ctx.json("GET", f"{api}/proposals/{proposal_id}", token=token)
    except PortalHttpError as exc:
        raise CliError(f"{exc}\nA recoverable Draft may exist here: {url}") from exc
    return str(proposal_id), refreshed.get("completeness") or {}


def missing_reasons(completeness: dict[str, Any]) -> list[str]:
    """`<step>: needs …` for each step the Draft page marks missing, in the page's words (the Portal's
    `completeness.steps`; a Portal that sends none gives no lines)."""
    steps = completeness.get("steps")
    lines = []
    for step in steps if isinstance(steps, list) else []:
        needs = step.get("needs") if isinstance(step, dict) else None
        if isinstance(needs, list) and needs and not step.get("done"):
            lines.append(f"{step.get('title') or step.get('key')}: needs {'; '.join(str(n) for n in needs)}")
    return lines


def _interactive(cli_ctx: CliContext) -> bool:
    return bool(getattr(cli_ctx.stdin, "isatty", lambda: False)())


def _prompt_token(cli_ctx: CliContext, api: str) -> str:
    click.echo(f"Create a CLI token at:\n  {token_settings_url(api)}\n")
    token = click.prompt("Paste token", hide_input=True, default="", show_default=False).strip()
    user = validate_token(cli_ctx, api, token)
    cli_ctx.credentials.save(api, token, user)
    return token


@click.command("submit")
@click.option("--task-dir", required=True, type=click.Path(path_type=Path, file_okay=False, exists=True),
              help="Local Task root containing task_meta.yaml")
@click.option("--endpoint", default=None, help=ENDPOINT_HELP)
@click.option("--force-file-sync", is_flag=True, default=False,
              help="Replace conflicting server files after reviewing the Draft")
@pass_cli
def submit(cli_ctx: CliContext, task_dir: Path, endpoint: str | None, force_file_sync: bool) -> None:
    """Upload a local Task as a Draft, then open the Portal for final confirmation."""
    problem = evidence_error(task_dir)
    if problem:
        raise CliError(problem)
    api = cli_ctx.api_base(endpoint)
    token = cli_ctx.resolve_token(api)
    from_store = token is not None and not any(cli_ctx.env.get(n) for n in ("ASIBENCH_SUBMIT_TOKEN",
                                                                           "AI4SCI_SUBMIT_TOKEN"))
    if not token:
        if not _interactive(cli_ctx):
            raise CliError("No saved ASI-Bench token is available in this non-interactive environment. Create one "
                           f"at {token_settings_url(api)} and set ASIBENCH_SUBMIT_TOKEN, or run `asibench login` "
                           "in a terminal.")
        token, from_store = _prompt_token(cli_ctx, api), False
    task = read_local_task(task_dir)
    click.echo(f"Validating and uploading Task from {task_dir} ...")
    try:
        proposal_id, completeness = sync_draft(cli_ctx, api, token, task, force_file_sync)
    except PortalHttpError as exc:  # T1 itself failed: there is no Draft yet
        if exc.status == 401 and from_store and _interactive(cli_ctx):
            cli_ctx.credentials.clear(api)
            click.echo("The saved token is no longer valid; paste a new Portal token.")
            proposal_id, completeness = sync_draft(cli_ctx, api, _prompt_token(cli_ctx, api), task, force_file_sync)
        else:
            raise
    url = proposal_page_url(api, proposal_id)
    click.secho(f"\nDRAFT UPLOAD COMPLETE — {len(task.files)} files synchronized.", fg="green")
    click.echo("The Task has not entered review; final confirmation is still required.")
    if completeness.get("percent") is not None:
        click.echo(f"Portal completeness: {completeness['percent']}%")
    missing = completeness.get("missing") or []
    if missing:
        click.secho("Missing: " + ", ".join(str(m) for m in missing), fg="yellow")
    for line in missing_reasons(completeness):
        click.secho(f"  {line}", fg="yellow")
    click.echo(f"Review the exact file list and imported fields, then submit:\n  {url}")
    cli_ctx.open_browser(url)
