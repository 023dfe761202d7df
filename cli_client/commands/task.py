"""`asibench task …`: the task group (pull, create, submit)."""

import click

from cli_client.commands.pull import pull
from cli_client.commands.task_create import create
from cli_client.commands.task_submit import submit as task_submit


@click.group("task")
def task_group() -> None:
    """Pull dataset instances, scaffold and submit tasks."""


task_group.add_command(pull)
task_group.add_command(create)
task_group.add_command(task_submit)
