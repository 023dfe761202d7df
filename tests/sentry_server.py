"""A local server that speaks Sentry's envelope protocol (POST /api/<project>/envelope/, gzip or plain):
it keeps every envelope it is sent, raw and parsed, for a test to read. Nothing leaves the machine."""

import gzip
import json
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support import wait_for


def envelope_parse(body: bytes) -> tuple[dict[str, Any], list[tuple[dict[str, Any], bytes]]]:
    """Header and items of an envelope: header line, then per item a header line and its payload, whose
    length the item header gives (or up to the next newline)."""
    header_line, _, rest = body.partition(b"\n")
    items = []
    while rest.strip():
        item_line, _, rest = rest.partition(b"\n")
        item = json.loads(item_line)
        if "length" in item:
            payload, rest = rest[:item["length"]], rest[item["length"]:]
            rest = rest[1:] if rest.startswith(b"\n") else rest
        else:
            payload, _, rest = rest.partition(b"\n")
        items.append((item, payload))
    return json.loads(header_line), items


class SentryServer:
    def __init__(self) -> None:
        self.envelopes: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                elif encoding:
                    self.send_error(415, f"unsupported encoding {encoding}")
                    return
                header, items = envelope_parse(body)
                server.envelopes.append({"path": self.path, "auth": self.headers.get("X-Sentry-Auth", ""),
                                         "raw": body.decode("utf-8", "replace"), "header": header,
                                         "items": [(h, json.loads(p) if h.get("type") == "event" else p)
                                                   for h, p in items]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.dsn = f"http://0123456789abcdef0123456789abcdef@127.0.0.1:{self.port}/42"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def events(self) -> list[tuple[dict[str, Any], str]]:
        """(event, the raw envelope it came in) for every error event received so far."""
        return [(payload, envelope["raw"]) for envelope in self.envelopes for header, payload in envelope["items"]
                if header.get("type") == "event"]

    def wait_for_events(self, count: int, timeout: float = 30) -> list[tuple[dict[str, Any], str]]:
        return wait_for(lambda: self.events() if len(self.events()) >= count else None, timeout,
                        f"{count} Sentry event(s)")

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
