"""Entry point: a thin click group and the one error boundary."""

import sys
import traceback

import click

from cli_client import CLIENT_NAME, CLIENT_VERSION, __version__
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
@click.version_option(__version__, prog_name="asibench",
                      message=f"%(prog)s, version %(version)s ({CLIENT_NAME} {CLIENT_VERSION})")
@click.option("--traceback", is_flag=True, help="On an error, also print the Python traceback (for bug reports).")
@click.pass_context
def cli(ctx: click.Context, traceback: bool) -> None:
    """ASI-Bench: pull scientific tasks, run agents, submit results to the Portal."""
    ctx.ensure_object(CliContext).show_traceback = traceback


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
    """The one error boundary: every failure becomes a message on stderr and an exit status."""
    context = context or CliContext()
    try:
        cli.main(args=argv, prog_name="asibench", obj=context, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(ExitStatus.USAGE if isinstance(exc, click.UsageError) else ExitStatus.ERROR)
    except CliError as exc:
        _traceback_if_asked(context)
        click.secho(f"Error: {exc}", fg="red", err=True)
        sys.exit(exc.exit_status)
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(ExitStatus.INTERRUPTED)
    except Exception as exc:  # a bug of ours: say so plainly, and how to report it
        _traceback_if_asked(context)
        click.secho(f"Error: unexpected {type(exc).__name__}: {exc}", fg="red", err=True)
        if not context.show_traceback:
            click.echo("This is a bug in asibench; run the command again with --traceback and report what it "
                       "prints.", err=True)
        sys.exit(ExitStatus.ERROR)
    sys.exit(ExitStatus.OK)


def _traceback_if_asked(context: CliContext) -> None:
    if context.show_traceback:
        click.echo(traceback.format_exc().rstrip(), err=True)
