"""`asibench validate --pre-submit DIR`: every local check a task proposal must pass."""

from __future__ import annotations

import json
from pathlib import Path

import click

from cli_client.authoring.presubmit import ValidationReport, validate_task_dir
from cli_client.errors import CliError
from scoring.engine.isolation import private_stdout

MARKS = {"pass": ("PASS", "green"), "fail": ("FAIL", "red"), "skipped": ("SKIP", "yellow")}


class ValidationFailed(CliError):
    pass


def print_report(report: ValidationReport) -> None:
    click.echo(f"Pre-submit validation: {report.task_dir}" + (f" ({report.task_id})" if report.task_id else ""))
    for check in report.to_dict()["checks"]:
        label, colour = MARKS[check["status"]]
        click.echo(f"  [{click.style(label, fg=colour)}] {check['name']:<19} {check['summary']}")
        for detail in check["details"]:
            for line in str(detail).splitlines():
                click.echo(f"         {line}")
    for warning in report.warnings:
        click.echo(f"  [{click.style('WARN', fg='yellow')}] {warning}")


def keyed_report(task_dir: Path, gt_timeout: float | None, key_file: Path) -> ValidationReport:
    # The task's generator and scorer run below this process and share its uid: they can print
    # anything, anywhere they reach. The key is read and its file deleted before any of them
    # runs, and this process is sealed (no /proc access to its memory or fds), so a report line
    # carrying it is ours; the Portal ignores every other line (see proposals.presubmit_sandbox).
    key = key_file.read_text(encoding="utf-8").strip()
    key_file.unlink()
    out = private_stdout()
    report = validate_task_dir(task_dir, generator_timeout=gt_timeout)
    out.write(f"\n{key} {json.dumps(report.to_dict())}\n")
    out.flush()
    return report


@click.command("validate")
@click.option("--pre-submit", "pre_submit", required=True,
              type=click.Path(path_type=Path, exists=True, file_okay=False),
              help="Task directory: static checks, ids, generator determinism, GT self-check.")
@click.option("--gt-timeout", type=float, default=None,
              help="Seconds per generator run (default: generation.timeout_seconds, else 300).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--report-key-file", type=click.Path(path_type=Path, dir_okay=False), default=None, hidden=True,
              help="(The Portal's sandbox) read a key from this file, delete it, and print only the report, "
                   "as one JSON line after the key, on a stdout the task's code cannot write.")
def validate(pre_submit: Path, gt_timeout: float | None, as_json: bool, report_key_file: Path | None) -> None:
    """Validate a task directory before `asibench task submit`; exit 1 if any check fails."""
    if report_key_file is not None:
        report = keyed_report(pre_submit, gt_timeout, report_key_file)
    else:
        report = validate_task_dir(pre_submit, generator_timeout=gt_timeout)
        if as_json:
            click.echo(json.dumps(report.to_dict(), indent=2))
        else:
            print_report(report)
    if not report.ok:
        names = ", ".join(c.name for c in report.failures)
        raise ValidationFailed(f"validation failed: {names}")
    if not as_json and report_key_file is None:
        click.secho("All pre-submit checks passed.", fg="green")
