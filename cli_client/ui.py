"""Rich consoles for the run/score commands: wide and unwrapped when output is not a terminal."""

from __future__ import annotations

import sys

from rich.console import Console


def console(*, stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    # Logs and pipes get whole lines; rich would otherwise wrap at 80 columns.
    width = None if stream.isatty() else 200
    return Console(stderr=stderr, width=width, soft_wrap=not stream.isatty())
