"""Inside an agent judge's sandbox: 127.0.0.1:<port> → the egress proxy's Unix socket, then the CLI.

    python -m scoring.judging.egress_bridge --socket S --port P [--stdin FILE] -- CLI ARGS...

Listens first, then runs the CLI with its stdin from FILE and this process's stdout/stderr, and
exits with its status. Standard library only: it runs on the sandbox's read-only Python.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import subprocess
import sys
import threading


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(1 << 16):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _forward(client: socket.socket, socket_path: str) -> None:
    with client, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as upstream:
        try:
            upstream.connect(socket_path)
        except OSError:
            return
        back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
        back.start()
        _pipe(client, upstream)
        back.join()


def _serve(listener: socket.socket, socket_path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_forward, args=(client, socket_path), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--socket", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--stdin", default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, args.socket), daemon=True).start()
    with open(args.stdin or os.devnull, "rb") as stdin:
        try:
            return subprocess.run(command, stdin=stdin, check=False).returncode
        except OSError as exc:
            print(f"egress_bridge: cannot run {command[:1]}: {exc}", file=sys.stderr)
            return 127


if __name__ == "__main__":
    sys.exit(main())
