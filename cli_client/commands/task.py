"""`asibench task …`: the task group (pull, create, submit)."""

import click

from cli_client.commands.pull import pull


@click.group("task")
def task_group() -> None:
    """Pull dataset instances, scaffold and submit tasks."""


task_group.add_command(pull)
