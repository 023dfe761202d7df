"""Judge calls as data, so the no-network sandbox can score a task with model judges.

A judge scorer builds its request (the rubric, the capped prediction and reference, the model
settings) and asks the evaluation's `JudgeSession` for the reply. The session answers from the
*book* the caller passed in (replies recorded earlier, keyed by request); when the book has no
reply, the request is noted as pending and the scorer returns a placeholder. An evaluation with
pending requests is not a score: the engine reports `judges_pending` with the requests, the
caller (the Portal's worker, or the CLI) asks the model outside the sandbox, and scores again
with the replies in the book. The same book replayed gives the same score, which is how a
rescore reuses recorded replies.

A request's key is the SHA-256 of everything that decides the reply (kind, model, messages,
generation settings, the files an agent judge sees); identical requests in one evaluation are
told apart by their index (the second of three judges asking the same question is index 1).
Nothing secret is ever in a request or a reply: the endpoint and its key stay with the caller.

What a book holds of a reply is what the engine needs, no more (`scoring.judging.verdicts` writes
it): for the built-in judges the score read from the reply (and, for an agent judge, where it was
read), for a custom scorer's own `litellm.completion` the reply's text it asked for. The judges'
raw replies and reasonings never enter the sandbox: each judge detail names the replies it used
(`reply_refs`), and the caller puts them back into the stored result.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .judge_parse import JudgeVerdict, clamp_score, parse_judge_reply
from .types import ScoreDetail, jsonable

# What the engine hands out and reads back; bump on an incompatible change of either shape.
JUDGE_PROTOCOL_VERSION = 1
# A judged image is read whole (it is sent whole); beyond this no provider accepts it anyway.
JUDGE_IMAGE_MAX_BYTES = 20 << 20
# A judged text file is decoded whole to count what truncation left out; outputs beyond this are
# refused rather than read into memory.
JUDGE_TEXT_MAX_BYTES = 64 << 20
# What of one reply is kept (the judge's max_tokens bounds real replies far below this).
REPLY_MAX_CHARS = 64_000
# What a judge detail says of a raw reply in the sandbox; the caller puts the reply in its place.
KEPT_OUTSIDE = "(kept outside the scoring sandbox)"


def request_key(request: dict[str, Any]) -> str:
    """The key of a request (its fields other than `key`, `index`, `scorer` and `truncated`)."""
    decisive = {k: v for k, v in request.items() if k not in ("key", "index", "scorer", "truncated")}
    canonical = json.dumps(jsonable(decisive), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def image_data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


@dataclass
class JudgeSession:
    """The replies one evaluation may use, and the requests it made that had none."""

    book: dict[str, dict[str, Any]] = field(default_factory=dict)
    pending: list[dict[str, Any]] = field(default_factory=list)
    used: list[dict[str, Any]] = field(default_factory=list)
    _next_index: dict[str, int] = field(default_factory=dict)

    def ask(self, request: dict[str, Any]) -> dict[str, Any] | None:
        """The recorded reply to `request` (its next index), or None after noting it as pending."""
        key = request_key(request)
        index = self._next_index.get(key, 0)
        self._next_index[key] = index + 1
        reply = (self.book.get(key) or {}).get(str(index))
        if isinstance(reply, dict):
            self.used.append({"key": key, "index": index})
            return {**reply, "ref": f"{key}:{index}"}
        # The request itself is handed back once per key; its repeats (num_judges) only say which.
        first = not any(p["key"] == key and "kind" in p for p in self.pending)
        self.pending.append({**request, "key": key, "index": index} if first else
                            {"key": key, "index": index, "scorer": request.get("scorer")})
        return None


_session: contextvars.ContextVar[JudgeSession | None] = contextvars.ContextVar("judge_session", default=None)


def active_session() -> JudgeSession:
    """The session of the evaluation in progress; outside one, a throwaway session (every request pending)."""
    return _session.get() or JudgeSession()


@contextlib.contextmanager
def judge_session(book: dict[str, Any] | None) -> Iterator[JudgeSession]:
    session = JudgeSession(book=book_checked(book))
    token = _session.set(session)
    try:
        yield session
    finally:
        _session.reset(token)


def requests_expanded(pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pending requests with each repeat filled in from the first request of its key."""
    full = {p["key"]: p for p in pending if isinstance(p, dict) and "kind" in p}
    return [{**full[p["key"]], "index": p["index"]} for p in pending
            if isinstance(p, dict) and p.get("key") in full and isinstance(p.get("index"), int)]


def book_checked(book: Any) -> dict[str, dict[str, Any]]:
    """A book as read from the caller's file: {key: {index: reply}}; anything malformed is left out."""
    if not isinstance(book, dict):
        return {}
    replies = book.get("replies", book)
    if not isinstance(replies, dict):
        return {}
    return {str(key): {str(i): r for i, r in by_index.items() if isinstance(r, dict)}
            for key, by_index in replies.items() if isinstance(by_index, dict)}


def pending_detail(scorer_name: str, weight: float, n_requests: int) -> ScoreDetail:
    """The placeholder a judge scorer returns while its replies are not in the book yet."""
    return ScoreDetail(scorer_name, 0.0, weight, True,
                       {"judge_pending": True, "pending_requests": n_requests},
                       f"waiting for the judge ({n_requests} call(s))")


def reply_text(reply: dict[str, Any]) -> str:
    text = reply.get("text")
    return text[:REPLY_MAX_CHARS] if isinstance(text, str) else ""


def reply_score(value: Any) -> float | None:
    """A score as a book carries it: a number, or "nan"/"inf"/"-inf" (JSON has none); None if not one."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def reply_verdict(reply: dict[str, Any], max_score: float) -> JudgeVerdict:
    """A chat judge's verdict: the score the caller read from the reply, or (a reply with its text) the
    score read here, by the same rule."""
    if "text" not in reply:
        score = reply_score(reply.get("score"))
        return JudgeVerdict(None if score is None else clamp_score(score, max_score))
    return parse_judge_reply(reply_text(reply), max_score)


def reply_raw(reply: dict[str, Any]) -> str:
    return reply_text(reply) if "text" in reply else KEPT_OUTSIDE


def usage_of(replies: list[dict[str, Any]]) -> dict[str, Any]:
    """Token counts and cost of the replies, as the caller recorded them (official `judge_cost` keys)."""
    usage: dict[str, Any] = {"input_tokens": 0, "output_tokens": 0, "num_invocations": 0}
    cost, priced = 0.0, True
    for reply in replies:
        counted: dict[str, Any] = reply["usage"] if isinstance(reply.get("usage"), dict) else {}
        usage["input_tokens"] += int(counted.get("input_tokens") or 0)
        usage["output_tokens"] += int(counted.get("output_tokens") or 0)
        usage["num_invocations"] += 1
        if isinstance(reply.get("cost_usd"), int | float):
            cost += float(reply["cost_usd"])
        else:
            priced = False
    usage["cost_usd"] = round(cost, 6) if priced and replies else None
    return usage
