"""``litellm.completion`` for custom scorers that call a judge model themselves.

There is no network in the scoring sandbox: a call becomes a request of the evaluation's judge
session, answered from the recorded replies (``scoring.engine.judge_calls``). Until the service
has asked the model, the reply is empty and the evaluation is reported `judges_pending`, so that
provisional run's score is never kept. ``api_base``/``api_key`` arguments are recorded, never
used: the service calls its own endpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scoring.engine.judge_calls import active_session, reply_text

__all__ = ["ModelResponse", "completion"]

drop_params = False
suppress_debug_info = True


class _Item:
    """Attribute and item access, as litellm's response objects allow both."""

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


@dataclass
class Message(_Item):
    content: str
    role: str = "assistant"


@dataclass
class Choice(_Item):
    message: Message
    index: int = 0
    finish_reason: str = "stop"


@dataclass
class Usage(_Item):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass
class ModelResponse(_Item):
    model: str
    choices: list[Choice] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


def completion(model: str, messages: list[dict[str, Any]], **kwargs: Any) -> ModelResponse:
    request = {
        "kind": "chat",
        "scorer": "custom_scorer",
        "model": str(model),
        "messages": messages,
        "max_tokens": kwargs.get("max_tokens"),
        "temperature": kwargs.get("temperature"),
        "reasoning_effort": kwargs.get("reasoning_effort"),
        "truncated": [],
    }
    reply = active_session().ask(request) or {}
    counted: dict[str, Any] = reply["usage"] if isinstance(reply.get("usage"), dict) else {}
    return ModelResponse(model=str(model), choices=[Choice(Message(reply_text(reply)))],
                         usage=Usage(int(counted.get("input_tokens") or 0), int(counted.get("output_tokens") or 0)))
