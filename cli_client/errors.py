"""Exit statuses and the errors the CLI's single error boundary turns into messages."""

import enum


class ExitStatus(enum.IntEnum):
    OK = 0
    ERROR = 1
    """A refusal or failure; for `asibench run`, also: no agent run completed."""
    USAGE = 2
    RUNS_INCOMPLETE = 3
    """`asibench run`: some agent runs completed and some did not (failed or timed out). Every result
    is written (a submitted one that did not complete scores what its outputs earn, usually 0), so a
    script can tell "look at the failures" from "nothing worked" (ERROR)."""
    INTERRUPTED = 130


class CliError(Exception):
    """A failure with a message for the user; the boundary prints it and exits non-zero."""

    exit_status = ExitStatus.ERROR


class RunsIncomplete(CliError):
    exit_status = ExitStatus.RUNS_INCOMPLETE


class PortalHttpError(CliError):
    def __init__(self, status: int, detail: str):
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail
