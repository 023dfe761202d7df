"""The judge client: one chat request in, one reply (text, tokens, cost) out, or JudgeUnavailable.

Behind `JudgeClient.complete` are the OpenAI SDK (chat completions: OpenAI, Gemini's and
OpenRouter's OpenAI-compatible endpoints, any gateway) and the Anthropic SDK (messages), as the
route of the model string says (`endpoint.JudgeEndpoint.route`). The SDKs' own retries are off:
each call gets up to three attempts, 1 s then 2 s apart, as the official engine does; what still
fails is unavailable, with the reason (keys redacted), and the caller decides when to try again.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from scoring.engine.judge_calls import JUDGE_IMAGE_MAX_BYTES, REPLY_MAX_CHARS, image_data_url
from scoring.sandbox.outputs import UnsafeOutput, read_output_file

from .endpoint import JudgeConfigurationError, JudgeEndpoint, Route

ATTEMPTS = 3
BACKOFF_SECONDS = (1.0, 2.0)
ImageReader = Callable[[dict[str, Any]], bytes]


class JudgeUnavailable(Exception):
    """No reply: the endpoint is unset, unreachable, refused the call or ran out of quota."""


def output_image_reader(pred_dir: Path, ref_dir: Path) -> Callable[[dict[str, Any]], bytes]:
    """Reads an image a judge request names (`side`: the prediction's or the reference's), within the output
    rules of the sandbox (no link out of the directory) and at most JUDGE_IMAGE_MAX_BYTES."""
    def read(part: dict[str, Any]) -> bytes:
        root = ref_dir if part.get("side") == "reference" else pred_dir
        try:
            return read_output_file(root, str(part.get("path")), max_bytes=JUDGE_IMAGE_MAX_BYTES)
        except (UnsafeOutput, OSError) as exc:
            raise JudgeUnavailable(f"the image {part.get('path')} cannot be read: {exc}") from None

    return read


@dataclass(frozen=True)
class JudgeReply:
    text: str
    input_tokens: int
    output_tokens: int
    model: str
    served_model: str
    seconds: float
    attempts: int
    cost_usd: float | None = None

    def record(self) -> dict[str, Any]:
        """The reply as the engine's book holds it (no endpoint, no key: it enters the sandbox)."""
        return {"text": self.text[:REPLY_MAX_CHARS], "model": self.model, "served_model": self.served_model,
                "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
                "cost_usd": self.cost_usd}


class JudgeClient(Protocol):
    def complete(self, request: dict[str, Any], read_image: ImageReader) -> JudgeReply: ...


def checked_image(part: dict[str, Any], data: bytes) -> bytes:
    """`data` if it is the image the sandbox named (size and sha256), else JudgeUnavailable."""
    if len(data) != part.get("bytes") or hashlib.sha256(data).hexdigest() != part.get("sha256"):
        raise JudgeUnavailable(f"{part.get('path')}: the image differs from the one the scorer read")
    return data


def _parts(content: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])


def _openai_content(content: Any, read_image: ImageReader) -> Any:
    if isinstance(content, str):
        return content
    out = []
    for part in _parts(content):
        if part.get("type") == "image_file":
            url = image_data_url(str(part.get("mime") or "image/png"), checked_image(part, read_image(part)))
            out.append({"type": "image_url", "image_url": {"url": url}})
        else:
            out.append(part)
    return out


def _anthropic_image(media_type: str, data: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _anthropic_content(content: Any, read_image: ImageReader) -> Any:
    if isinstance(content, str):
        return content
    out = []
    for part in _parts(content):
        kind = part.get("type")
        if kind == "image_file":
            data = checked_image(part, read_image(part))
            out.append(_anthropic_image(str(part.get("mime") or "image/png"), base64.b64encode(data).decode()))
        elif kind == "image_url":
            url = str((part.get("image_url") or {}).get("url") or "")
            header, _, encoded = url.partition(",")
            if not header.startswith("data:") or ";base64" not in header:
                raise JudgeUnavailable("Anthropic judges take inline (data:) images only")
            out.append(_anthropic_image(header[5:].split(";")[0], encoded))
        else:
            out.append({"type": "text", "text": str(part.get("text") or "")})
    return out


def _text_of(content: Any) -> str:
    return "\n\n".join(str(p.get("text") or "") for p in _parts(content) if p.get("type") == "text")


class SdkJudgeClient:
    """Thread-safe: one SDK client per destination, shared by the calls in flight."""

    def __init__(self, endpoint: JudgeEndpoint, *, timeout: float = 120.0, attempts: int = ATTEMPTS,
                 backoff: tuple[float, ...] = BACKOFF_SECONDS, prices: Mapping[str, Any] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.endpoint, self.timeout, self.attempts, self.backoff = endpoint, timeout, attempts, backoff
        self.prices = dict(prices or {})
        self.sleep = sleep
        self._clients: dict[tuple[str, str, str], Any] = {}
        self._lock = threading.Lock()

    def _sdk(self, route: Route) -> Any:
        with self._lock:
            key = (route.wire, route.base_url, route.key_env)
            if key not in self._clients:
                if route.wire == "anthropic":
                    import anthropic

                    self._clients[key] = anthropic.Anthropic(api_key=route.api_key, base_url=route.base_url,
                                                             timeout=self.timeout, max_retries=0)
                else:
                    import openai

                    self._clients[key] = openai.OpenAI(api_key=route.api_key, base_url=route.base_url,
                                                       timeout=self.timeout, max_retries=0)
            return self._clients[key]

    def cost(self, route: Route, input_tokens: int, output_tokens: int) -> float | None:
        """USD from the operator's price table (per million tokens, keyed by the resolved model)."""
        price = self.prices.get(route.resolved) or self.prices.get(route.model)
        if not isinstance(price, list | tuple) or len(price) != 2:
            return None
        return round((input_tokens * float(price[0]) + output_tokens * float(price[1])) / 1e6, 8)

    def complete(self, request: dict[str, Any], read_image: ImageReader) -> JudgeReply:
        try:
            route = self.endpoint.route(str(request.get("model") or ""))
        except JudgeConfigurationError as exc:
            raise JudgeUnavailable(str(exc)) from None
        call = self._anthropic_call if route.wire == "anthropic" else self._openai_call
        prepared = call(route, request, read_image)
        started = time.monotonic()
        last: Exception | None = None
        for attempt in range(self.attempts):
            try:
                text, served, tokens_in, tokens_out = prepared()
            except JudgeUnavailable:
                raise
            except Exception as exc:  # the SDKs raise many kinds; every one is a failed attempt
                last = exc
                if attempt < self.attempts - 1:
                    self.sleep(self.backoff[min(attempt, len(self.backoff) - 1)])
                continue
            return JudgeReply(text, tokens_in, tokens_out, route.resolved, served, round(time.monotonic() - started, 3),
                              attempt + 1, self.cost(route, tokens_in, tokens_out))
        reason = f"{type(last).__name__}: {last}".replace(route.api_key, "<redacted>")
        raise JudgeUnavailable(f"{route.resolved} at {route.base_url}: {reason[:500]} "
                               f"(after {self.attempts} attempts)")

    def _openai_call(self, route: Route, request: dict[str, Any], read_image: ImageReader) -> Callable[[], Any]:
        messages = [{"role": m.get("role"), "content": _openai_content(m.get("content"), read_image)}
                    for m in request.get("messages") or []]
        kwargs: dict[str, Any] = {"model": route.model, "messages": messages}
        if request.get("max_tokens") is not None:
            kwargs[route.completion_tokens_field] = request["max_tokens"]
        if request.get("temperature") is not None:
            kwargs["temperature"] = request["temperature"]
        if request.get("reasoning_effort"):
            kwargs["reasoning_effort"] = request["reasoning_effort"]
        client = self._sdk(route)

        def call() -> tuple[str, str, int, int]:
            response = client.chat.completions.create(**kwargs)
            usage = response.usage
            text = response.choices[0].message.content if response.choices else None
            return (text or "", str(response.model or route.model), int(getattr(usage, "prompt_tokens", 0) or 0),
                    int(getattr(usage, "completion_tokens", 0) or 0))

        return call

    def _anthropic_call(self, route: Route, request: dict[str, Any], read_image: ImageReader) -> Callable[[], Any]:
        messages = request.get("messages") or []
        system = "\n\n".join(_text_of(m.get("content")) for m in messages if m.get("role") == "system")
        kwargs: dict[str, Any] = {
            "model": route.model,
            "max_tokens": request.get("max_tokens") or 1024,
            "messages": [{"role": m.get("role"), "content": _anthropic_content(m.get("content"), read_image)}
                         for m in messages if m.get("role") != "system"],
        }
        if system:
            kwargs["system"] = system
        if request.get("temperature") is not None:
            # This SDK release dropped the typed argument; the messages API still takes the field.
            kwargs["extra_body"] = {"temperature": request["temperature"]}
        client = self._sdk(route)

        def call() -> tuple[str, str, int, int]:
            response = client.messages.create(**kwargs)
            text = "".join(getattr(block, "text", "") or "" for block in response.content or [])
            usage = response.usage
            return (text, str(response.model or route.model), int(getattr(usage, "input_tokens", 0) or 0),
                    int(getattr(usage, "output_tokens", 0) or 0))

        return call
