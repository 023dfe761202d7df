"""A local model endpoint speaking the OpenAI chat-completions and Anthropic messages wire protocols,
answering from a script, for tests and benches (no real model is reachable here).

What it answers is chosen by a marker in the judged content: `JUDGE-SCRIPT:<behaviour>` in a
predicted text file, or in a PNG's text chunk for image judges (`png_with_script`); without one,
`default` (well:5). Behaviours:

    well:<n>          {"score": n, "reasoning": "…"}
    fenced:<n>        a ```json fenced block
    prose:<n>         the JSON object wrapped in prose
    text:<n>          free text only ("I would give it n/10")
    seq:<a>,<b>,<c>   the k-th identical request gets the k-th value (well-formed)
    malformed         no score anywhere
    slow:<seconds>:<n> waits, then answers well:<n> (past a client's timeout)
    429:<n>           the first identical request gets 429, the next ones well:<n>
    500               always HTTP 500
    leak:<n>          well:<n>, its reasoning quoting the credentials the request came with (a gateway
                      that echoes them: what a judge returns is not trusted to be free of secrets)

Every request is kept (`requests`) with its path, headers and JSON body; `max_in_flight` is the most
requests it ever served at once. `latency` delays every answer.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import threading
import time
from collections import defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MARKER = re.compile(rb"JUDGE-SCRIPT:([A-Za-z0-9_.,:-]+)")


def png_with_script(behaviour: str, size: tuple[int, int] = (24, 16), seed: int = 0) -> bytes:
    """A small PNG whose text chunk carries the behaviour for an image judge."""
    import numpy as np
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    info.add_text("Comment", f"JUDGE-SCRIPT:{behaviour}")
    pixels = (np.random.RandomState(seed).rand(size[1], size[0], 3) * 255).astype("uint8")
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG", pnginfo=info)
    return out.getvalue()


def _payloads(body: dict[str, Any]) -> list[bytes]:
    """Bytes in which to look for a marker: user texts first, then decoded inline images."""
    texts: list[bytes] = []
    images: list[bytes] = []
    for message in body.get("messages") or []:
        if message.get("role") == "system":
            continue
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for part in parts:
            if part.get("type") == "text":
                texts.append(str(part.get("text") or "").encode())
            elif part.get("type") == "image_url":
                url = str((part.get("image_url") or {}).get("url") or "")
                images.append(base64.b64decode(url.partition(",")[2] or b""))
            elif part.get("type") == "image":
                images.append(base64.b64decode((part.get("source") or {}).get("data") or b""))
    return texts + images


def behaviour_of(body: dict[str, Any], default: str = "well:5") -> str:
    for payload in _payloads(body):
        found = MARKER.search(payload)
        if found:
            return found.group(1).decode()
    return default


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # bursts of concurrent judge calls must not overflow the listen backlog
    daemon_threads = True


class JudgeEndpoint:
    def __init__(self, latency: float = 0.0, default: str = "well:5") -> None:
        self.latency, self.default = latency, default
        self.requests: list[dict[str, Any]] = []
        self._seen: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.server = _Server(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> JudgeEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None,
               ) -> tuple[int, dict[str, Any], float]:
        """(status, JSON body, seconds to wait first) for one request."""
        behaviour = behaviour_of(body, self.default)
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with self._lock:
            self.requests.append({"path": path, "body": body, "behaviour": behaviour, "headers": headers or {}})
            nth = self._seen[digest]
            self._seen[digest] += 1
        kind, _, arg = behaviour.partition(":")
        delay = self.latency
        if kind == "500":
            return 500, {"error": {"message": "scripted server error", "type": "server_error"}}, delay
        if kind == "429" and nth == 0:
            return 429, {"error": {"message": "scripted rate limit", "type": "rate_limit_error"}}, delay
        if kind == "slow":
            seconds, _, arg = arg.partition(":")
            delay += float(seconds)
            kind = "well"
        if kind == "leak":
            sent = (headers or {}).get("authorization") or (headers or {}).get("x-api-key") or ""
            text = json.dumps({"score": float(arg), "reasoning": f"leak {arg}: called with {sent}"})
        else:
            text = self.reply_text(kind, arg, nth)
        return 200, self.wire_body(path, body, text), delay

    @staticmethod
    def reply_text(kind: str, arg: str, nth: int) -> str:
        if kind == "seq":
            values = arg.split(",")
            kind, arg = "well", values[nth % len(values)]
        if kind in ("well", "429"):
            return json.dumps({"score": float(arg), "reasoning": f"scripted {arg}"})
        if kind == "fenced":
            return f'Here is my assessment.\n```json\n{{"score": {arg}, "reasoning": "fenced {arg}"}}\n```\n'
        if kind == "prose":
            return (f'I looked at the output carefully {{not json}}. My verdict: {{"score": {arg}, '
                    f'"reasoning": "prose {arg}"}} and that is final.')
        if kind == "text":
            return f"I would give it {arg}/10 overall."
        return "I cannot decide on a number for this one."

    @staticmethod
    def wire_body(path: str, body: dict[str, Any], text: str) -> dict[str, Any]:
        prompt_chars = len(json.dumps(body.get("messages") or []))
        usage_in, usage_out = prompt_chars // 4, len(text) // 4
        if path.endswith("/messages"):
            return {"id": "msg_scripted", "type": "message", "role": "assistant", "model": body.get("model"),
                    "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": usage_in, "output_tokens": usage_out}}
        return {"id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out,
                          "total_tokens": usage_in + usage_out}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                with endpoint._lock:
                    endpoint.in_flight += 1
                    endpoint.max_in_flight = max(endpoint.max_in_flight, endpoint.in_flight)
                try:
                    self._answer()
                finally:
                    with endpoint._lock:
                        endpoint.in_flight -= 1

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                if not (self.path.endswith("/chat/completions") or self.path.endswith("/messages")):
                    status, payload, delay = 404, {"error": {"message": f"no route {self.path}"}}, 0.0
                else:
                    status, payload, delay = endpoint.answer(self.path, body, {k.lower(): v for k, v in
                                                                              self.headers.items()})
                time.sleep(delay)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
                    pass

        return Handler
