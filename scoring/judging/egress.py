"""The only way out of an agent judge's sandbox: an HTTP proxy on a Unix socket that reaches one host.

The judge CLI runs in a network namespace with nothing but loopback; inside, `egress_bridge`
forwards 127.0.0.1:<port> to this proxy's socket (bound into the sandbox), and the CLI is told
to use http://127.0.0.1:<port> as its HTTP(S) proxy. The proxy accepts `CONNECT host:port` (TLS
endpoints) and absolute-form requests (plain-HTTP endpoints) for the one allowed host and port,
and refuses everything else with 403, noting what was refused.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path
from urllib.parse import urlsplit

_HEADER_LIMIT = 64 << 10
_DROPPED_HEADERS = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")


def allowed_destination(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {base_url!r}")
    return parts.hostname.lower(), parts.port or (443 if parts.scheme == "https" else 80)


def _pipe(source: socket.socket, sink: socket.socket) -> None:
    try:
        while chunk := source.recv(1 << 16):
            sink.sendall(chunk)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _splice(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways until each side has closed its half."""
    back = threading.Thread(target=_pipe, args=(b, a), daemon=True)
    back.start()
    _pipe(a, b)
    back.join()


class EgressProxy:
    def __init__(self, socket_path: Path, allowed: tuple[str, int], connect_timeout: float = 30.0) -> None:
        self.socket_path, self.allowed, self.connect_timeout = Path(socket_path), allowed, connect_timeout
        self.refused: list[str] = []
        self.forwarded: list[str] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._threads: list[threading.Thread] = []
        self._closed = threading.Event()

    def __enter__(self) -> EgressProxy:
        self._server.bind(str(self.socket_path))
        # The sandbox uid must be able to connect; nothing else can reach the directory's socket.
        os.chmod(self.socket_path, 0o777)
        self._server.listen(64)
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        with contextlib.suppress(OSError):
            self.socket_path.unlink()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _refuse(self, client: socket.socket, what: str) -> None:
        self.refused.append(what)
        body = f"egress to {what} is not allowed from an agent judge\n".encode()
        with contextlib.suppress(OSError):
            client.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                           + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)

    def _serve(self, client: socket.socket) -> None:
        with client:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(4096)
                if not chunk or len(head) > _HEADER_LIMIT:
                    return
                head += chunk
            header, _, rest = head.partition(b"\r\n\r\n")
            lines = header.split(b"\r\n")
            try:
                method, target, version = lines[0].decode("latin-1").split(" ", 2)
            except ValueError:
                return
            if method.upper() == "CONNECT":
                host, _, port = target.rpartition(":")
                destination = (host.strip("[]").lower(), int(port) if port.isdigit() else -1)
                origin_request = None
            else:
                parts = urlsplit(target)
                if parts.scheme != "http" or not parts.hostname:
                    return self._refuse(client, target[:200])
                destination = (parts.hostname.lower(), parts.port or 80)
                path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
                kept = [h for h in lines[1:] if h.split(b":", 1)[0].strip().lower() not in _DROPPED_HEADERS]
                origin_request = b"\r\n".join([f"{method} {path} {version}".encode("latin-1"), *kept,
                                               b"Connection: close"]) + b"\r\n\r\n" + rest
            what = f"{destination[0]}:{destination[1]}"
            if destination != self.allowed:
                return self._refuse(client, what)
            try:
                upstream = socket.create_connection(destination, timeout=self.connect_timeout)
            except OSError:
                with contextlib.suppress(OSError):
                    client.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            self.forwarded.append(what)
            with upstream:
                upstream.settimeout(None)
                if origin_request is None:
                    client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    if rest:
                        upstream.sendall(rest)
                else:
                    upstream.sendall(origin_request)
                _splice(client, upstream)
