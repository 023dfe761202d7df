"""`asibench difficulty-check`: run one agent on every prompt level of a task and apply the B3/B4 rule."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from cli_client.authoring.difficulty import (
    CheckOptions,
    CheckReport,
    check_options,
    run_check,
    save_evaluation,
    write_submission_results,
)
from cli_client.commands.run import REPO_ROOT, STATUS_STYLE, comma_list, parse_agent_config
from cli_client.context import CliContext, pass_cli
from cli_client.errors import CliError
from cli_client.running.runner import Outcome
from cli_client.ui import console as make_console
from contracts import PROMPT_LEVELS
from contracts import difficulty as policy
from contracts.task_files import SUBMISSION_FILE


class DifficultyFailed(CliError):
    """The check ran to the end and a B3/B4 mean is not below the threshold (exit 1)."""


def result_table(report: CheckReport, threshold: float) -> Table:
    table = Table(title=f"difficulty-check {report.task_id} (B3/B4 must stay below {threshold:g})")
    for column in ("level", "mean", "max", "min", "n", "result"):
        table.add_column(column)
    for row in report.rows:
        if not row["enforced"]:
            result = "RECORDED"
        else:
            result = "[green]PASS[/]" if row["passed"] else "[red]FAIL[/]"
        table.add_row(row["prompt_level"].upper(), f"{row['mean']:.2f}", f"{row['max']:.2f}", f"{row['min']:.2f}",
                      str(row["n"]), result)
    return table


def checked_threshold(ctx: click.Context, param: click.Parameter, value: float) -> float:
    problem = policy.threshold_problem(value)
    if problem:
        raise click.BadParameter(problem)
    return value


@click.command("difficulty-check")
@click.option("--task", "task_id", required=True, help="Task id <domain>.<name>.")
@click.option("--tasks-dir", type=click.Path(path_type=Path, file_okay=False), default=Path("tasks"),
              show_default=True, help="Catalog holding <domain>/<name>/ with the task's generator and scorers.")
@click.option("--agent-cmd", required=True,
              help="Shell command template as for `asibench run` ({workspace} {prompt_file} {prompt_level} …).")
@click.option("--agent-config", default=None,
              help='JSON object recorded with the results, e.g. {"agent": "codex_cli", "provider": "OpenAI", '
                   '"model": "gpt-x", "effort": "high"}; keys cwd and timeout act as for `run`.')
@click.option("--sandbox", type=click.Choice(["os", "linux_ns", "none"]), default="none", show_default=True,
              help="How the agent runs, as for `asibench run`.")
@click.option("--prompt-levels", default=",".join(PROMPT_LEVELS), show_default=True)
@click.option("--instances-per-task", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--seed", type=int, default=42, show_default=True, help="Run seed for the instance parameters.")
@click.option("--threshold", type=float, callback=checked_threshold, default=policy.DIFFICULTY_THRESHOLD,
              show_default=True, help="B3/B4 pass iff their mean is below this (1–40; lower is stricter).")
@click.option("--timeout", type=click.IntRange(min=1), default=10800, show_default=True,
              help="Seconds per agent run; a run that times out aborts the check.")
@click.option("--scorer-timeout", type=float, default=600.0, show_default=True)
@click.option("--ro-mount", "ro_mounts", multiple=True, type=click.Path(path_type=Path, exists=True),
              help="linux_ns: extra read-only path the agent needs (repeatable).")
@click.option("--pass-env", "pass_env", multiple=True, help="linux_ns: pass this environment variable through.")
@click.option("--scores-dir", type=click.Path(path_type=Path, file_okay=False), default=Path("scores"),
              show_default=True, help="Where scores/<task_id>.json is kept (the evaluation is appended).")
@click.option("--write-yaml/--no-write-yaml", "write_yaml", default=None,
              help="Write the results into the task's task_submission.yaml local_test_results "
                   "(default: ask when interactive).")
@click.option("--yes", "-y", "assume_yes", is_flag=True, help="Answer yes to the question (implies --write-yaml).")
@pass_cli
def difficulty_check(cli_ctx: CliContext, task_id: str, tasks_dir: Path, agent_cmd: str, agent_config: str | None,
                     sandbox: str, prompt_levels: str, instances_per_task: int, seed: int, threshold: float,
                     timeout: int, scorer_timeout: float, ro_mounts: tuple[Path, ...], pass_env: tuple[str, ...],
                     scores_dir: Path, write_yaml: bool | None, assume_yes: bool) -> None:
    """Same-agent trial of one task across prompt levels; exit 0 pass, 1 fail, 2 aborted (nothing saved).

    B1/B2 are recorded; B3 and B4 pass iff their mean over the instances is below --threshold.
    """
    config = parse_agent_config(agent_config)
    options = CheckOptions(
        task_id=task_id.strip(), tasks_dir=tasks_dir, agent_cmd=agent_cmd, agent_config=config, sandbox=sandbox,
        prompt_levels=comma_list(prompt_levels), instances_per_task=instances_per_task, seed=seed,
        threshold=threshold, timeout=timeout, scorer_timeout=scorer_timeout, ro_mounts=ro_mounts,
        pass_env=pass_env,
    )
    check_options(options)
    console = make_console(stderr=True)

    def done(outcome: Outcome) -> None:
        style = STATUS_STYLE.get(outcome.status, "")
        console.print(f"[{style}]{outcome.status:9}[/] {outcome.item.stem} ({outcome.seconds:.1f}s)")

    def scored(outcome: Outcome, final: float) -> None:
        console.print(f"scored    {outcome.item.stem}: {final:.2f}")

    console.print(f"Generating {instances_per_task} instance(s) of {options.task_id} (seed {seed}) …")
    report = run_check(options, host_env=cli_ctx.env, repo_root=REPO_ROOT, on_done=done, on_scored=scored)
    make_console().print(result_table(report, threshold))
    path = save_evaluation(report, scores_dir)
    click.echo(f"Verdict: {report.verdict.upper()}. Evaluation appended to {path}")

    if assume_yes:
        write_yaml = True
    if write_yaml is None:
        if cli_ctx.stdin.isatty():
            write_yaml = click.confirm(f"Write these results into {report.task_dir / SUBMISSION_FILE} "
                                       "local_test_results?", default=False)
        else:
            click.echo(f"Not written to {SUBMISSION_FILE} (not interactive); pass --write-yaml or --yes to write.")
    if write_yaml:
        written = write_submission_results(report, config)
        click.echo(f"Wrote the results into {written} (local_test_results).")
    if report.verdict != "pass":
        failing = [f"{row['prompt_level'].upper()} mean {row['mean']:.2f}" for row in report.rows
                   if row["enforced"] and not row["passed"]]
        raise DifficultyFailed(f"difficulty check failed: {', '.join(failing)} not below {threshold:g}; "
                               "the Portal will not accept this task until B3 and B4 are harder")
