"""What the scoring sandbox gets of a judge's reply, and what is put back outside it.

Task code runs in the scoring sandbox beside the judge book, and can read it. So the book carries
what the engine needs to score and nothing else (`sandbox_reply`): for the built-in judges
(llm_judge, vlm_judge, agent_judge) the score read from each reply, by the official rules of
`scoring.engine`; for a custom scorer's own `litellm.completion` the reply's text, which is what
that code asked the model for (a chat model is never given a key; the text is redacted anyway).
An agent judge's output (its stdout, its score.json, its reasoning: text a CLI that held a key
wrote) never enters the sandbox. The judges' raw replies and reasonings that a stored score shows
maintainers are put back into the result afterwards, from the recorded, redacted replies
(`details_completed`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scoring.engine.judge_calls import reply_text
from scoring.engine.judge_parse import read_judge_reply
from scoring.engine.scorers.judges import agent_reading

# The judges whose detail the engine builds from scores alone.
BUILT_IN_JUDGES = frozenset({"llm_judge", "multimodal:vlm_judge", "agent_judge"})
# A detail naming more replies than this is not one of ours; it is left as it is.
MAX_REFS = 256


def _number(value: float | None) -> float | str | None:
    """A score as JSON can carry it ("nan", "inf" and "-inf" as text, as `reply_score` reads them)."""
    if value is None or math.isfinite(value):
        return value
    return str(value)


def sandbox_reply(request: Mapping[str, Any], reply: Mapping[str, Any]) -> dict[str, Any]:
    """The book entry of one answered call (`reply` as recorded, already redacted)."""
    if request.get("kind") == "agent":
        value, _, source, _ = agent_reading(dict(reply))
        return {"outcome": reply.get("outcome"), "score": _number(value), "source": source}
    accounting = {"model": reply.get("model"), "served_model": reply.get("served_model"),
                  "usage": reply.get("usage"), "cost_usd": reply.get("cost_usd")}
    if str(request.get("scorer")) in BUILT_IN_JUDGES:
        found = read_judge_reply(reply_text(dict(reply)))
        return {"score": _number(found[0]) if found else None, **accounting}
    return {"text": reply_text(dict(reply)), **accounting}


def _raw_and_reasoning(reply: Mapping[str, Any]) -> tuple[str, str]:
    if "outcome" in reply:
        _, reasoning, _, raw_log = agent_reading(dict(reply))
        return raw_log, reasoning
    text = reply_text(dict(reply))
    found = read_judge_reply(text)
    return text, found[1] if found else ""


def _complete(node: Any, replies: Mapping[str, Mapping[str, Any]], depth: int) -> None:
    if depth > 8:
        return
    if isinstance(node, list):
        for item in node:
            _complete(item, replies, depth + 1)
        return
    if not isinstance(node, dict):
        return
    refs = node.pop("reply_refs", None)
    raws, reasonings = node.get("raw_responses"), node.get("reasonings")
    if isinstance(refs, list) and len(refs) <= MAX_REFS and isinstance(raws, list) and isinstance(reasonings, list):
        for i, ref in enumerate(refs):
            reply = replies.get(ref) if isinstance(ref, str) else None
            if reply is None:
                continue
            raw, reasoning = _raw_and_reasoning(reply)
            if i < len(raws):
                raws[i] = raw
            if i < len(reasonings):
                reasonings[i] = reasoning
    for value in node.values():
        _complete(value, replies, depth + 1)


def details_completed(result: dict[str, Any], replies: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """`result` (changed in place) with each judge detail's raw replies and reasonings put back from
    `replies` ({"<key>:<index>": recorded reply}) as its `reply_refs` name them, the refs removed."""
    for field in ("gate_results", "score_results"):
        entries = result.get(field)
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict):
                _complete(entry.get("details"), replies, 0)
    return result
