"""Reading a judge's reply and combining several replies into one score (contract §2.12).

The order is the official engine's: a fenced JSON block, then the last brace-delimited object
that has a ``score``, then free-text patterns (``9/10``, ``Score: 9``, ``"score": 9``,
``9 out of 10``). A parsed score is clamped to [0, max]; a reply nothing can be read from is
dropped from the median, and when every reply is dropped the median is 0.
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from typing import Any

from .types import ScoreDetail

_FENCED = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_FREE_TEXT = (
    re.compile(r"\b(\d+(?:\.\d+)?)\s*/\s*\d+"),
    re.compile(r"[*]*[Ss]core[*]*\s*[*:=\-]+\s*(\d+(?:\.\d+)?)"),
    re.compile(r"\"score\"\s*:\s*(\d+(?:\.\d+)?)"),
    re.compile(r"\b(\d+(?:\.\d+)?)\s+out\s+of\s+\d+"),
)
PARSE_FAILED = "PARSE_FAILED"


@dataclass(frozen=True)
class JudgeVerdict:
    """One reply read: its clamped score (None: unreadable) and the reasoning it gave, if any."""

    score: float | None
    reasoning: str = ""


def _score_of(obj: Any) -> tuple[float, str] | None:
    if not isinstance(obj, dict) or "score" not in obj:
        return None
    try:
        value = float(obj["score"])
    except (TypeError, ValueError):
        return None
    reasoning = obj.get("reasoning")
    return value, reasoning if isinstance(reasoning, str) else ""


def _fenced(raw: str) -> tuple[float, str] | None:
    match = _FENCED.search(raw)
    if not match:
        return None
    try:
        return _score_of(json.loads(match.group(1)))
    except ValueError:
        return None


def _last_object(raw: str) -> tuple[float, str] | None:
    """Scanning back from each closing brace, the first opening brace that makes a JSON object
    with a score; closing braces are tried from the last one backwards."""
    end = len(raw)
    while (close := raw.rfind("}", 0, end)) >= 0:
        start = raw.rfind("{", 0, close + 1)
        while start >= 0:
            try:
                found = _score_of(json.loads(raw[start:close + 1]))
            except ValueError:
                found = None
            if found is not None:
                return found
            start = raw.rfind("{", 0, start)
        end = close
    return None


def _free_text(raw: str) -> tuple[float, str] | None:
    for pattern in _FREE_TEXT:
        match = pattern.search(raw)
        if match:
            return float(match.group(1)), ""
    return None


def clamp_score(value: float, max_score: float) -> float:
    # max(0, min(v, max)) in this order: NaN becomes 0 and +inf becomes max, as upstream.
    return max(0.0, min(float(value), max_score))


def read_judge_reply(raw: str | None) -> tuple[float, str] | None:
    """(the score as the reply gives it, not clamped; the reasoning), or None when none can be read."""
    if not raw or not raw.strip():
        return None
    return _fenced(raw) or _last_object(raw) or _free_text(raw)


def parse_judge_reply(raw: str | None, max_score: float = 10.0) -> JudgeVerdict:
    found = read_judge_reply(raw)
    if found is None:
        return JudgeVerdict(None)
    return JudgeVerdict(clamp_score(found[0], max_score), found[1])


def parse_judge_score(raw: str | None, max_score: float = 10.0) -> float | None:
    """The score of one reply, or None: what ``ai4sci_bench.scorers._parse_utils.parse_judge_json`` returns."""
    return parse_judge_reply(raw, max_score).score


def judge_detail(
    *,
    scorer_name: str,
    model: str,
    verdicts: list[JudgeVerdict],
    raw_responses: list[str],
    num_judges: int,
    max_score_value: float,
    weight: float,
    threshold: float,
    extra_details: dict[str, Any] | None = None,
) -> ScoreDetail:
    """Median of the readable scores ÷ max_score_value × weight, rounded to 4 decimals."""
    scores = [v.score for v in verdicts]
    valid = [s for s in scores if s is not None]
    median = statistics.median(valid) if valid else 0.0
    normalized = median / max_score_value if max_score_value > 0 else 0.0
    details: dict[str, Any] = {
        "model": model,
        "num_judges": num_judges,
        "individual_scores": [s if s is not None else PARSE_FAILED for s in scores],
        "raw_responses": raw_responses,
        "parse_failures": len(scores) - len(valid),
        "valid_judge_count": len(valid),
        "median_score": median,
        "normalized_score": round(normalized, 4),
        "threshold": threshold,
        "reasonings": [v.reasoning for v in verdicts],
        **(extra_details or {}),
    }
    return ScoreDetail(scorer_name, round(normalized * weight, 4), weight, normalized >= threshold, details,
                       f"Judge median: {median}/{max_score_value}")
