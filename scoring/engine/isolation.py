"""Task code runs in a child process that cannot write the engine's result channel.

The engine's stdout is the channel the caller reads results from, and a task's custom scorer is
hostile code (task authors are not trusted with other results, nor with scores outside the task's
range). So the engine process never imports task code itself: it forks one child per result, in
which fd 1 is a copy of stderr before any task code runs. The child sends its one result back on a
pipe of its own and leaves with `os._exit`, so atexit hooks and buffered output of task code die
with it; whatever it writes to fd 1 (at import, in a hook, from a thread or a grandchild) lands on
stderr. The engine marks itself non-dumpable first, so a child of the same uid can neither ptrace
it nor open its stdout through /proc/<ppid>/fd/1. Job ids of a batch are therefore worthless to a
forger, and a child that forges its own pipe only sets its own result, which the host checks
(`scoring.engine.cli.result_checked`) like any other.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, TextIO

from .types import jsonable

_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the separate process and fd 1 still hold
        pass


def engine_process_seal() -> None:
    """Make this process non-dumpable (Linux): no ptrace or /proc/<pid>/fd access for its children."""
    _prctl(_PR_SET_DUMPABLE, 0)


def private_stdout() -> TextIO:
    """This process's stdout as a stream only it holds; fd 1 becomes a copy of stderr.

    For a process that runs hostile code in children and reports on stdout (`asibench validate
    --pre-submit` in the Portal's sandbox): the process is sealed first, the private copy is
    close-on-exec, so no child inherits it or reaches it through /proc; whatever else writes to
    fd 1 (this process's own prints, children that inherit fd 1) lands on stderr.
    """
    engine_process_seal()
    sys.stdout.flush()
    private = os.fdopen(os.dup(1), "w", encoding="utf-8")  # os.dup: not inheritable
    os.dup2(2, 1)
    return private


def _crashed(message: str) -> dict[str, Any]:
    return {"evaluation_status": "evaluation_invalid", "final_score": None, "failure_kind": "scorer_crashed",
            "error": message}


def run_isolated(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`work()` in a forked child whose fd 1 is stderr; its result dict, or a crash result."""
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 0
        try:
            os.close(read_end)
            os.dup2(2, 1)
            # A caller that kills the engine (e.g. `asibench score` on its timeout) kills this too.
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
            try:
                result = work()
            except BaseException as exc:  # noqa: BLE001 (task code may raise anything, SystemExit too)
                result = _crashed(f"{type(exc).__name__}: {exc}")
            for stream in (sys.stdout, sys.stderr):  # the scorer's chatter, before os._exit drops it
                try:
                    stream.flush()
                except BaseException:  # noqa: BLE001, S110
                    pass
            payload = (json.dumps(jsonable(result), allow_nan=False, sort_keys=True) + "\n").encode()
            with os.fdopen(write_end, "wb") as out:
                out.write(payload)
        except BaseException:  # noqa: BLE001
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    # One newline-terminated message: stop there, so a grandchild holding the pipe open cannot
    # keep the engine waiting after the child has answered.
    data = bytearray()
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while b"\n" not in data:
            chunk = pipe.read(1 << 16)
            if not chunk:
                break
            data += chunk
    os.kill(pid, signal.SIGKILL)  # answered (or closed its pipe): nothing more is wanted of it
    _, status = os.waitpid(pid, 0)
    line = bytes(data).split(b"\n", 1)[0]
    try:
        answer = json.loads(line)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        code = os.waitstatus_to_exitcode(status)
        return _crashed(f"the scoring process ended without a result (exit {code})")
    return answer
