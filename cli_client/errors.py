"""Exit statuses and the errors the CLI's single error boundary turns into messages."""

import enum


class ExitStatus(enum.IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    INTERRUPTED = 130


class CliError(Exception):
    """A failure with a message for the user; the boundary prints it and exits non-zero."""

    exit_status = ExitStatus.ERROR


class PortalHttpError(CliError):
    def __init__(self, status: int, detail: str):
        super().__init__(f"HTTP {status}: {detail}")
        self.status = status
        self.detail = detail
