"""`asibench submit --wait`: follow an uploaded run on the Portal until it is scored (or is not).

Polls `GET {API}/submissions/<id>` (our Portal's progress endpoint) and draws one progress line:
waiting for Confirm, the queue position, then "scored k of n" with a bar and each task's partial
score as results land. Returns the final reply when the run is scored; raises CliError (non-zero
exit) when it failed, was withdrawn or expired, or the wait timed out.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

import click

from cli_client.context import CliContext
from cli_client.errors import CliError

BAR_WIDTH = 30
ENDED = {"failed": "Scoring failed", "withdrawn": "The draft was withdrawn", "expired": "The draft expired"}


def progress_url(api_base: str, reply: dict[str, Any]) -> str | None:
    """Where to poll: the upload reply's `status_url`, else derived from its submission id."""
    if isinstance(reply.get("status_url"), str) and reply["status_url"]:
        return reply["status_url"]
    submission_id = reply.get("submission_id") or reply.get("id")
    return f"{api_base.rstrip('/')}/submissions/{submission_id}" if submission_id else None


def percent(value: int | float) -> str:
    """A score as the Portal sent it: owners get whole percents before publication, maintainers exact."""
    return str(value) if isinstance(value, int) else f"{value:.1f}"


def describe(state: dict[str, Any]) -> str:
    """One line for the current state (no colours: it is also what logs and tests read)."""
    status = state.get("status", "?")
    if status == "draft":
        return f"Waiting for you to confirm the draft: {state.get('confirm_url', '')}"
    if status == "queued":
        position, total = state.get("queue_position"), state.get("queued_total")
        return f"Queued for scoring: position {position} of {total}" if position else "Queued for scoring"
    progress = state.get("progress") or {}
    scored, total = int(progress.get("scored") or 0), int(progress.get("total") or 0)
    if status == "scoring":
        filled = BAR_WIDTH * scored // total if total else 0
        tasks = ", ".join(f"{t['task_id']} {percent(t['percent'])} ({t['scored']}/{t['total']})"
                          for t in state.get("tasks") or [] if t.get("percent") is not None)
        return (f"Scoring [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] scored {scored} of {total}"
                + (f"  | {tasks}" if tasks else ""))
    return f"Status: {status}"


def follow_submission(
    cli_ctx: CliContext, url: str, token: str, *, interval: float, timeout: float | None,
    out: TextIO | None = None, sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    stream: TextIO = out if out is not None else sys.stdout
    tty = stream.isatty()
    deadline = time.monotonic() + timeout if timeout else None
    last = ""
    while True:
        state = cli_ctx.json("GET", url, token=token, timeout=60)
        line = describe(state)
        if line != last:
            # A terminal gets one line redrawn in place; pipes and logs get a line per change.
            stream.write(("\r\x1b[2K" + line) if tty else (line + "\n"))
            stream.flush()
            last = line
        status = state.get("status")
        if status == "scored":
            if tty:
                stream.write("\n")
            return state
        if status in ENDED:
            if tty:
                stream.write("\n")
            reason = state.get("status_reason") or ""
            raise CliError(f"{ENDED[status]}" + (f": {reason}" if reason else "."))
        if deadline is not None and time.monotonic() >= deadline:
            if tty:
                stream.write("\n")
            raise CliError(f"Gave up waiting after {timeout:g} s; the run is {status}. Follow it at "
                           f"{state.get('confirm_url', url)}")
        sleep(interval)


def print_final(state: dict[str, Any]) -> None:
    levels = state.get("levels") or {}
    shown = "  ".join(f"{k.upper()} {percent(v)}" if isinstance(v, int | float) else f"{k.upper()} —"
                      for k, v in levels.items())
    overall = state.get("overall_score")
    click.secho(f"Scored: overall {percent(overall)}" if isinstance(overall, int | float) else "Scored.",
                fg="green")
    if shown:
        click.echo(f"  {shown}")
    for task in state.get("tasks") or []:
        if task.get("percent") is not None:
            click.echo(f"  {task['task_id']}: {percent(task['percent'])} ({task['scored']} results)")
