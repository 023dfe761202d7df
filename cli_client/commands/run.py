"""`asibench run`: run a custom agent command over pulled instances (produce-only, never scores)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli_client.context import CliContext, pass_cli
from cli_client.errors import CliError, RunsIncomplete
from cli_client.running.runner import Outcome, Runner, RunOptions, WorkItem
from cli_client.ui import console as make_console
from contracts import PROMPT_LEVELS

REPO_ROOT = Path(__file__).resolve().parents[2]
STATUS_STYLE = {"completed": "green", "failed": "red", "timeout": "yellow"}


def comma_list(value: str | None) -> tuple[str, ...]:
    return tuple(part.strip() for part in (value or "").split(",") if part.strip())


def parse_agent_config(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(f"--agent-config is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CliError("--agent-config must be a JSON object")
    return value


def summary_table(outcomes: list[Outcome], attempts: int) -> Table:
    table = Table(title="asibench run", show_lines=False)
    for column in ("task", "instance", "level", *(["attempt"] if attempts > 1 else []), "status", "outputs",
                   "seconds", ""):
        table.add_column(column)
    for o in outcomes:
        style = STATUS_STYLE.get(o.status, "")
        row = [o.item.instance.task_id, o.item.instance.instance_id.partition("__")[2], o.item.level]
        if attempts > 1:
            row.append(str(o.item.attempt))
        row += [f"[{style}]{o.status}[/]", f"{o.outputs_found}/{len(o.item.instance.expected_outputs)}",
                f"{o.seconds:.1f}", "resumed" if o.skipped else ""]
        table.add_row(*row)
    return table


@click.command("run")
@click.option("--instances-dir", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Pulled instances (<task_id>__<suffix>/ folders); only read, never written.")
@click.option("--agent-cmd", required=True,
              help="Shell command template; placeholders {workspace} {prompt_file} {prompt_level} "
                   "{task_id} {instance_id} (values shell-quoted; double literal braces).")
@click.option("--sandbox", type=click.Choice(["none", "linux_ns", "os"]), default="none", show_default=True,
              help="none: plain host process. linux_ns: bubblewrap, workspace is the only writable path. "
                   "os: a container on the Docker API at DOCKER_HOST (what seed42 requires officially).")
@click.option("--image", default=None, help="os: the container image the agent runs in (recorded by its id).")
@click.option("--network", type=click.Choice(["none", "bridge"]), default=None,
              help="os (required): none = loopback only; bridge = the engine's NAT, to reach a model provider.")
@click.option("--tasks", "tasks_csv", default=None, help="Comma list of task ids to run (default: all).")
@click.option("--tasks-dir", type=click.Path(path_type=Path, file_okay=False), default=Path("tasks"),
              show_default=True, help="Task catalog (declared outputs, versions, runtime).")
@click.option("--prompt-levels", default=",".join(PROMPT_LEVELS), show_default=True)
@click.option("--spot-validation", "spot_validation", type=int, default=None,
              help="Re-run a spot validation's sample: its tasks and levels, read from the Portal you are logged in "
                   "to (replaces --tasks and --prompt-levels).")
@click.option("--timeout", type=int, default=10800, show_default=True, help="Seconds per agent run.")
@click.option("--attempts", type=int, default=1, show_default=True,
              help="Runs per (instance, level); attempt N>1 is saved as __attempt<N>.")
@click.option("--agent-config", default=None, help="JSON object recorded in provenance (keys: cwd, timeout).")
@click.option("--ro-mount", "ro_mounts", multiple=True, type=click.Path(path_type=Path, exists=True),
              help="linux_ns/os: extra read-only path the agent needs (repeatable), e.g. examples/ and tasks/.")
@click.option("--pass-env", "pass_env", multiple=True,
              help="linux_ns/os: pass this environment variable through (repeatable); provider keys "
                   "(*_API_KEY, *_BASE_URL, …) and proxies pass by default.")
@click.option("--keep-workspaces", is_flag=True,
              help="Keep each temporary workspace and link it under <output>/instances/_workspaces/.")
@click.option("--output-dir", required=True, type=click.Path(path_type=Path, file_okay=False))
@pass_cli
def run(cli_ctx: CliContext, instances_dir: Path, agent_cmd: str, sandbox: str, image: str | None,
        network: str | None, tasks_csv: str | None,
        tasks_dir: Path, prompt_levels: str, spot_validation: int | None, timeout: int, attempts: int,
        agent_config: str | None,
        ro_mounts: tuple[Path, ...], pass_env: tuple[str, ...], keep_workspaces: bool,
        output_dir: Path) -> None:
    """Run an agent command on every instance and prompt level; write a results tree for `submit`/`score`.

    Rerunning with the same --output-dir skips work whose result file is already complete.
    Exit status: 0 when every agent run completed, 3 when some failed or timed out (their results are
    written too), 1 when none completed or the run could not start.
    """
    if spot_validation is not None:
        tasks_csv, prompt_levels = spot_validation_selection(cli_ctx, spot_validation)
    options = RunOptions(
        instances_dir=instances_dir, output_dir=output_dir, agent_cmd=agent_cmd, sandbox=sandbox,
        tasks_dir=tasks_dir, tasks=comma_list(tasks_csv), prompt_levels=comma_list(prompt_levels),
        timeout=timeout, attempts=attempts, ro_mounts=ro_mounts, pass_env=pass_env,
        keep_workspaces=keep_workspaces, agent_config=parse_agent_config(agent_config),
        image=image, network=network,
    )
    runner = Runner(options, host_env=cli_ctx.env, repo_root=REPO_ROOT)
    items = runner.work_items()
    console = make_console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        bar = progress.add_task("starting", total=len(items))

        def started(item: WorkItem) -> None:
            progress.update(bar, description=f"{item.stem}")

        def done(outcome: Outcome) -> None:
            progress.advance(bar)
            if not outcome.skipped:
                style = STATUS_STYLE.get(outcome.status, "")
                progress.console.print(f"[{style}]{outcome.status:9}[/] {outcome.item.stem} "
                                       f"({outcome.seconds:.1f}s)")

        outcomes = runner.run(on_start=started, on_done=done)
        progress.update(bar, description="done")
    make_console().print(summary_table(outcomes, attempts))
    counts = {s: sum(o.status == s for o in outcomes) for s in ("completed", "failed", "timeout")}
    skipped = sum(o.skipped for o in outcomes)
    click.echo(f"{len(outcomes)} runs: {counts['completed']} completed, {counts['failed']} failed, "
               f"{counts['timeout']} timed out ({skipped} already done). Results in {output_dir}")
    raise_unless_all_completed(outcomes, output_dir)


def spot_validation_selection(cli_ctx: CliContext, validation_id: int) -> tuple[str, str]:
    """The tasks and levels of a spot validation's sample (`--tasks`, `--prompt-levels`), from the Portal."""
    api_base = cli_ctx.api_base(None)
    token = cli_ctx.resolve_token(api_base)
    if not token:
        raise CliError("--spot-validation reads the sample from the Portal: log in first (asibench login).")
    body = cli_ctx.json("GET", f"{api_base}/spot-validations/{validation_id}", token=token, timeout=60)
    tasks, levels = body.get("tasks") or [], body.get("prompt_levels") or []
    if not tasks or not levels:
        raise CliError(f"Spot validation {validation_id} names no results to re-run.")
    click.echo(f"Spot validation {validation_id}: re-running {', '.join(tasks)} at {', '.join(levels)} "
               f"(sample of {len(body.get('sample') or [])}).", err=True)
    return ",".join(tasks), ",".join(levels)


def raise_unless_all_completed(outcomes: list[Outcome], output_dir: Path) -> None:
    """The exit status of a run (cli_client.errors.ExitStatus): OK when every agent run completed,
    RUNS_INCOMPLETE when only some did, ERROR when none did."""
    unfinished = [o for o in outcomes if o.status != "completed"]
    if not unfinished:
        return
    failed = sum(o.status == "failed" for o in unfinished)
    what = f"{failed} failed, {len(unfinished) - failed} timed out"
    where = f"agent_output.error_message and .log in each result under {output_dir} say why"
    if len(unfinished) == len(outcomes):
        raise CliError(f"No agent run completed ({what}); {where}.")
    raise RunsIncomplete(f"{len(unfinished)} of {len(outcomes)} agent runs did not complete ({what}); {where}. "
                         "The other results are written and can be submitted.")
