"""PID 1 of a scoring container: runs the command, reaps orphans, and lends its stdout to nobody.

A container's init holds the container's stdout, which is the engine's result channel. An init
started as the container user (podman's catatonit, docker's tini) is dumpable, so task code of
the same uid could open /proc/1/fd/1 and write a forged result line before the engine's own.
This init marks itself non-dumpable before anything else runs: with every capability dropped,
no process of the container can then ptrace it or open its file descriptors through /proc.
The command it starts is the engine, which seals itself the same way (scoring.engine.isolation).

Run by path (`python -I .../container_init.py CMD...`) so that it imports nothing of the project:
stdlib only, no package __init__.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

_PR_SET_DUMPABLE = 4


def main(argv: list[str]) -> int:
    if not argv:
        sys.stderr.write("container_init: no command\n")
        return 2
    if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        sys.stderr.write("container_init: cannot make itself non-dumpable; refusing to run\n")
        return 70
    child = os.fork()
    if child == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            sys.stderr.write(f"container_init: cannot run {argv[0]}: {exc.strerror}\n")
        os._exit(127)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda received, _frame: os.kill(child, received))
    while True:  # reap every orphan; leave with the command's status
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        except InterruptedError:
            continue
        if pid == child:
            return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
