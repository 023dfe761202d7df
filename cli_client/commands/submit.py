"""`asibench submit`: bundle a produce-only run (schema v1) and upload it as a draft (client contract §3)."""

import tempfile
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from cli_client.context import CliContext, error_detail, pass_cli
from cli_client.errors import CliError, PortalHttpError
from cli_client.remote.endpoints import bundle_upload_url, given_endpoint, origin, portal_api_base
from cli_client.remote.follow import follow_submission, print_final, progress_url
from contracts.bundle import (
    BundleBuildError,
    BundleSummary,
    ResultRecord,
    build_bundle,
    scan_results,
    validate_records,
    write_archive,
)

UPLOAD_TIMEOUT = 300.0
NOT_SUBMITTED = "NOT SUBMITTED — nothing was uploaded"
NO_TOKEN = (
    "Submission requires an ASI-Bench identity. Run `asibench login` and approve the browser sign-in, "
    "or pass --token / set ASIBENCH_SUBMIT_TOKEN in headless environments."
)


def bundle_paths(results_dir: Path, output: str | None, now: datetime | None = None) -> tuple[Path, Path]:
    """(bundle dir, archive path) exactly as the official client derives them from --output."""
    if output is None:
        stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
        bundle_dir = results_dir / f"submission_{stamp}"
        return bundle_dir, bundle_dir.with_name(bundle_dir.name + ".tar.gz")
    path = Path(output)
    for suffix in (".tar.gz", ".tgz"):
        if path.name.endswith(suffix):
            return path.with_name(path.name[: -len(suffix)]), path
    return path, path.with_name(path.name + ".tar.gz")


def upload_target(cli_ctx: CliContext, endpoint: str | None) -> str | None:
    """Where to upload: --endpoint, then ASIBENCH_SUBMIT_ENDPOINT / AI4SCI_SUBMIT_ENDPOINT, then the Portal
    of the most recent `asibench login`; None (build only) when none of them names one. Unlike the
    official client, a run is never sent to the official Portal unless the user named it somewhere."""
    given = given_endpoint(endpoint, cli_ctx.env)
    return given[0] if given else cli_ctx.saved_api_base()


def check_token(cli_ctx: CliContext, api_base: str, token: str) -> None:
    """Ask the Portal whose token this is before anything is packed: a refused token is reported in a
    second, not after building and sending the whole bundle."""
    try:
        cli_ctx.json("GET", f"{api_base}/me", token=token, timeout=30)
    except PortalHttpError as exc:
        if exc.status in (401, 403):
            raise CliError(f"The Portal at {origin(api_base)} refused the token ({exc.detail.rstrip('.')}): run "
                           "`asibench login`, or pass --token / set ASIBENCH_SUBMIT_TOKEN. Nothing was packed or "
                           "uploaded.") from exc
        raise CliError(f"Could not check the token with the Portal at {origin(api_base)} ({exc}); nothing was "
                       "packed or uploaded.") from exc


def _format_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


def _print_summary(summary: BundleSummary, archive: Path | None, kept: bool) -> None:
    if kept:
        click.echo(f"Bundle built: {summary.bundle_dir}")
    else:
        click.echo("Bundle packed (in a temporary directory, removed after the upload):")
    click.echo(f"  instances: {summary.instance_count}")
    if summary.run_metadata_included:
        click.echo("  run_metadata.json: included")
    if archive is not None:
        size = _format_size(archive.stat().st_size)
        click.echo(f"  archive:   {archive} ({size})" if kept else f"  archive:   {size}, in the temporary directory")
    flagged = summary.entries_missing_outputs
    if flagged:
        click.secho(
            f"  WARNING: {len(flagged)} instance(s) are missing declared output files (the agent did not "
            "produce them). These will be scored as incomplete:",
            fg="yellow",
        )
        for entry in flagged:
            click.echo(f"    - {entry.base_name}: missing {entry.missing_outputs}")


def upload_archive(cli_ctx: CliContext, url: str, archive: Path, token: str) -> dict[str, Any]:
    """POST the archive as the raw body, streamed from disk; return the reply's JSON object (or {})."""
    headers = {
        "Content-Type": "application/gzip",
        "Content-Length": str(archive.stat().st_size),
        "X-ASIBench-Filename": archive.name,
    }
    with archive.open("rb") as body:
        # A redirected POST would lose its body (contract §3.7), so redirects count as failures.
        response = cli_ctx.request("POST", url, token=token, timeout=UPLOAD_TIMEOUT, data=body, headers=headers,
                                   allow_redirects=False)
    if not 200 <= response.status_code < 300:
        raise PortalHttpError(response.status_code, error_detail(response))
    click.secho(f"  OK (HTTP {response.status_code})", fg="green")
    try:
        reply = response.json() if response.content else {}
    except ValueError:
        return {}
    return reply if isinstance(reply, dict) else {}


def _print_reply(reply: dict[str, Any]) -> None:
    submission_id = reply.get("submission_id") or reply.get("id")
    if submission_id:
        click.echo(f"  submission_id: {submission_id}")
    if reply.get("status"):
        click.echo(f"  status: {reply['status']}")
    if reply.get("integrity_ok") is False:
        click.secho("  integrity check FAILED on the server — re-run submit and re-upload.", fg="red")
    elif reply.get("integrity_ok") is True:
        click.echo("  integrity: OK")
    incomplete = reply.get("incomplete_instances")
    if isinstance(incomplete, list):
        click.echo(f"  incomplete instances: {len(incomplete)}")
    if reply.get("message"):
        click.echo(f"  {reply['message']}")
    if reply.get("created") is False:
        # Our Portal's answer when it already holds these results (the same bytes, or the same result
        # files packed again): no new draft was made.
        state = reply.get("state") or reply.get("status") or "?"
        url = reply.get("run_url") or reply.get("confirm_url") or ""
        click.secho(f"\n  ALREADY SUBMITTED — the Portal already has these results as run {submission_id} "
                    f"({state}); nothing new was created.\n    {url}", fg="yellow")
        if reply.get("confirm_url"):
            click.secho("  It is still a DRAFT: open the page above and click Confirm to queue it for scoring.",
                        fg="cyan")
        return
    if reply.get("confirm_url"):
        click.secho(
            "\n  UPLOAD COMPLETE — confirmation is still required.\n"
            "  Your run is saved on the Portal as a DRAFT. It is NOT submitted until you open this page,\n"
            "  review the integrity and completeness report, and click Confirm:\n"
            f"    {reply['confirm_url']}",
            fg="cyan",
        )


@click.command("submit")
@click.option("--results-dir", "results_dir", required=True, help="A produce-only run dir (from `asibench run`).")
@click.option("--output", "output", default=None,
              help="Bundle path: a dir, or a *.tar.gz archive. Default: <results-dir>/submission_<timestamp>.tar.gz")
@click.option("--note", default=None, help="Free-form submitter note (team / model).")
@click.option("--benchmark-repo", default=None, help="Official seed42 dataset, recorded for provenance.")
@click.option("--endpoint", default=None,
              help="Portal URL (default: $ASIBENCH_SUBMIT_ENDPOINT, then the Portal of your last `asibench login`; "
                   "with neither, the bundle is only built).")
@click.option("--token", default=None, help="CLI token (default: $ASIBENCH_SUBMIT_TOKEN, then the saved login).")
@click.option("--no-upload", is_flag=True, help="Build the bundle only; never upload.")
@click.option("--no-archive", is_flag=True, help="Keep the bundle directory only, no .tar.gz (implies --no-upload).")
@click.option("--wait", "wait", is_flag=True,
              help="After the upload, follow the run (Confirm, queue, scoring) until it is scored; "
                   "exit non-zero if it fails.")
@click.option("--wait-timeout", type=click.FloatRange(min=1), default=None, help="Give up waiting after N seconds.")
@click.option("--poll-interval", type=click.FloatRange(min=0.2), default=3.0, show_default=True,
              help="Seconds between progress checks with --wait.")
@pass_cli
def submit(cli_ctx: CliContext, results_dir: str, output: str | None, note: str | None,
           benchmark_repo: str | None, endpoint: str | None, token: str | None, no_upload: bool,
           no_archive: bool, wait: bool, wait_timeout: float | None, poll_interval: float) -> None:
    """Bundle a seed42 run and upload it; the run stays a DRAFT until you confirm it in the browser.

    Uploads go to --endpoint, $ASIBENCH_SUBMIT_ENDPOINT, or the Portal of your last `asibench login`;
    with none of them (or --no-upload) the bundle is only built. The token is checked before packing.
    An upload is packed in a temporary directory (removed afterwards) unless --output names a path.
    """
    results = Path(results_dir)
    if not results.is_dir():
        raise CliError(f"Results directory not found: {results}")
    try:
        records = scan_results(results)
        if not records:
            raise BundleBuildError(f"No per-instance result JSON found under {results}. Run `asibench run ...` first.")
        # Every record is checked before anything is written, credentials read or the network touched.
        validate_records(records, benchmark_repo)
    except BundleBuildError as exc:
        raise CliError(str(exc)) from exc

    target = None if (no_upload or no_archive) else upload_target(cli_ctx, endpoint)
    if target is None:
        bundle_dir, archive_path = bundle_paths(results, output)
        summary = _build(results, bundle_dir, note, benchmark_repo, records)
        archive = None if no_archive else write_archive(bundle_dir, archive_path)
        _print_summary(summary, archive, kept=True)
        reason = ("--no-archive (no tarball to send)" if no_archive else "--no-upload" if no_upload
                  else "no endpoint: pass --endpoint, set ASIBENCH_SUBMIT_ENDPOINT or run `asibench login`")
        click.secho(f"\n{NOT_SUBMITTED} ({reason}). The bundle is ready above.", fg="yellow")
        return

    portal_api = portal_api_base(target)
    api_base = portal_api or target.rstrip("/")
    secret = cli_ctx.resolve_token(api_base, token)
    if not secret:
        raise CliError(NO_TOKEN)
    if portal_api is not None:  # a custom receiver (contract §1.4) has no /me to ask
        check_token(cli_ctx, portal_api, secret)
    with ExitStack() as cleanup:
        if output is None:
            # Outside the results dir: re-running submit must not leave a bundle there each time.
            packing = Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="asibench-submit-")))
            bundle_dir, archive_path = bundle_paths(packing, None)
        else:
            bundle_dir, archive_path = bundle_paths(results, output)
        summary = _build(results, bundle_dir, note, benchmark_repo, records)
        archive = write_archive(bundle_dir, archive_path)
        _print_summary(summary, archive, kept=output is not None)
        url = bundle_upload_url(target)
        click.echo(f"\nUploading to {url} ...")
        reply = upload_archive(cli_ctx, url, archive, secret)
    _print_reply(reply)
    if wait:
        status_url = progress_url(api_base, reply)
        if status_url is None:
            raise CliError("--wait: the Portal's reply names no submission to follow.")
        click.echo("")
        final = follow_submission(cli_ctx, status_url, secret, interval=poll_interval, timeout=wait_timeout)
        print_final(final)


def _build(results: Path, bundle_dir: Path, note: str | None, benchmark_repo: str | None,
           records: list[ResultRecord]) -> BundleSummary:
    try:
        return build_bundle(results, bundle_dir, note, benchmark_repo, records=records)
    except BundleBuildError as exc:
        raise CliError(str(exc)) from exc
