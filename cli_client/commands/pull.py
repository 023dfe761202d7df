"""`asibench task pull`: fetch a dataset's instances from the Portal."""

from pathlib import Path

import click
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

from cli_client.context import CliContext, pass_cli
from cli_client.errors import CliError
from cli_client.remote.endpoints import ENDPOINT_HELP
from cli_client.remote.instance_fetch import list_instances, pull_instance


@click.command("pull")
@click.option("--repo", required=True, type=click.Choice(["seed42", "seed31415"]), help="Which fixed-seed dataset.")
@click.option("--tasks", default="", help="Comma-separated task ids (default: every task).")
@click.option("--output-dir", type=click.Path(path_type=Path, file_okay=False), default=Path("hf_instances"))
@click.option("--overwrite", is_flag=True, help="Download again even if an instance is present and intact.")
@click.option("--endpoint", default=None, help=ENDPOINT_HELP)
@pass_cli
def pull(cli_ctx: CliContext, repo: str, tasks: str, output_dir: Path, overwrite: bool, endpoint: str | None) -> None:
    """Download instances (prompts, data, task_info.json; references only for seed31415)."""
    task_ids = [t.strip() for t in tasks.split(",") if t.strip()]
    bad = [t for t in task_ids if "." not in t]
    if bad:
        raise CliError(f"Task ids look like '<domain>.<name>': {', '.join(bad)}")
    api_base = cli_ctx.api_base(endpoint)
    entries = list_instances(cli_ctx, api_base, repo, task_ids)
    if not entries:
        raise CliError(f"Dataset {repo} has no instances{' for those tasks' if task_ids else ''}.")
    output_dir.mkdir(parents=True, exist_ok=True)
    console = Console(stderr=True)
    counts = {"downloaded": 0, "skipped": 0, "repaired": 0}
    with Progress(
        TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(), console=console
    ) as progress:
        bar = progress.add_task(f"{repo}", total=sum(int(e.get("bytes") or 0) for e in entries))
        for entry in entries:
            progress.update(bar, description=entry["instance_id"])
            outcome = pull_instance(cli_ctx, entry, output_dir, overwrite, lambda n: progress.advance(bar, n))
            if outcome.action == "skipped":
                progress.advance(bar, int(entry.get("bytes") or 0))
            counts[outcome.action] += 1
    click.echo(
        f"{len(entries)} instances of {repo} in {output_dir}: "
        f"{counts['downloaded']} downloaded, {counts['repaired']} repaired, {counts['skipped']} already present"
    )
