"""`asibench task create`: scaffold a new task that passes `validate --pre-submit` as written."""

from __future__ import annotations

from pathlib import Path

import click

from cli_client.authoring.scaffold import create_task


@click.command("create")
@click.option("--domain", required=True, help="Domain, e.g. physics (lowercase snake case).")
@click.option("--name", required=True, help="Task name, e.g. toy_transit_fit (lowercase snake case).")
@click.option("--tasks-dir", type=click.Path(path_type=Path, file_okay=False), default=Path("tasks"),
              show_default=True)
def create(domain: str, name: str, tasks_dir: Path) -> None:
    """Create <tasks-dir>/<domain>/<name>/ from the template (a small working example task)."""
    target, warnings = create_task(tasks_dir, domain, name)
    for warning in warnings:
        click.secho(f"Warning: {warning}", fg="yellow", err=True)
    click.echo(f"Created {target} ({domain}.{name}).")
    click.echo("Next: replace the example computation in generate_gt.py, the prompts and task_eval.yaml,")
    click.echo(f"then run `asibench validate --pre-submit {target}`.")
