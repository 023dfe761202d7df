"""Entry point: a thin click group and the one error boundary."""

import sys

import click

from cli_client import __version__
from cli_client.commands import auth
from cli_client.commands.difficulty_check import difficulty_check as difficulty_check_command
from cli_client.commands.run import run as run_command
from cli_client.commands.score import score as score_command
from cli_client.commands.submit import submit as submit_command
from cli_client.commands.task import task_group
from cli_client.commands.validate import validate as validate_command
from cli_client.context import CliContext
from cli_client.errors import CliError, ExitStatus


@click.group()
@click.version_option(__version__, prog_name="asibench")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """ASI-Bench: pull scientific tasks, run agents, submit results to the Portal."""
    ctx.ensure_object(CliContext)


cli.add_command(auth.login)
cli.add_command(auth.logout)
cli.add_command(auth.auth_group)
cli.add_command(submit_command)
cli.add_command(task_group)
cli.add_command(run_command)
cli.add_command(score_command)
cli.add_command(validate_command)
cli.add_command(difficulty_check_command)


def main(argv: list[str] | None = None, context: CliContext | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="asibench", obj=context or CliContext(), standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(ExitStatus.USAGE if isinstance(exc, click.UsageError) else ExitStatus.ERROR)
    except CliError as exc:
        click.secho(f"Error: {exc}", fg="red", err=True)
        sys.exit(exc.exit_status)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    sys.exit(ExitStatus.OK)
