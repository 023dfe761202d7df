"""`asibench score --repo seed31415`: local, non-official scores for a produce-only run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.table import Table

from cli_client.errors import CliError
from cli_client.running.local_score import PUBLIC_REPO, ScoreJob, score_results
from cli_client.ui import console as make_console


class EvaluationsInvalid(CliError):
    """The report was written, but some evaluations could not be scored."""


@click.command("score")
@click.option("--repo", required=True, help="Must be seed31415: seed42 is scored only by the Portal.")
@click.option("--results-dir", required=True, type=click.Path(path_type=Path, file_okay=False))
@click.option("--instances-dir", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Pulled seed31415 instances, with reference/.")
@click.option("--tasks-dir", type=click.Path(path_type=Path, file_okay=False), default=Path("tasks"),
              show_default=True, help="Task catalog holding each task's scoring contract.")
@click.option("--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Report path (default: <results-dir>/local_score_seed31415.json).")
@click.option("--scorer-timeout", type=float, default=600.0, show_default=True,
              help="Seconds one evaluation may take.")
def score(repo: str, results_dir: Path, instances_dir: Path, tasks_dir: Path, output: Path | None,
          scorer_timeout: float) -> None:
    """Score results against public seed31415 references (never official; source results are not modified)."""
    # Checked before any path is touched: seed42 references are private.
    if repo.strip().lower() != PUBLIC_REPO:
        raise CliError(f"Local scoring supports only --repo {PUBLIC_REPO}; "
                       f"{repo} results are scored officially with `asibench submit`.")
    console = make_console(stderr=True)

    def progress(job: ScoreJob, result: dict[str, Any]) -> None:
        if result.get("evaluation_status") == "completed":
            console.print(f"scored   {job.source_result}: {result['final_score']:.2f}/{result['max_score']:.2f}")
        else:
            console.print(f"[red]invalid[/]  {job.source_result}: {result.get('failure_kind')} "
                          f"{result.get('error') or ''}".rstrip())

    report, path = score_results(results_dir.resolve(), instances_dir.resolve(), tasks_dir.resolve(),
                                 output.resolve() if output else None, scorer_timeout, progress)
    table = Table(title="Local seed31415 scores (not official)")
    for column in ("result", "level", "status", "score", "max"):
        table.add_column(column)
    for entry in report["results"]:
        final = entry["final_score"]
        table.add_row(entry["instance_id"], entry["prompt_level"] or "", entry["evaluation_status"],
                      "—" if final is None else f"{final:.2f}", f"{entry['max_score'] or 0:.2f}")
    make_console().print(table)
    mean = report["mean_percent"]
    click.echo(f"Total {report['total_score']:.2f}/{report['total_max_score']:.2f}"
               f" ({'n/a' if mean is None else f'{mean:.1f}%'}), "
               f"{report['scored_instance_count']}/{report['instance_count']} scored. Report: {path}")
    if report["scorer_error_count"]:
        raise EvaluationsInvalid(f"{report['scorer_error_count']} evaluation(s) invalid; see {path}")
