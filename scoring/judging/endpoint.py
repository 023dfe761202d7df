"""Where a judge call goes and with which key: the official 0.2.0 operator settings.

`ASIBENCH_JUDGE_API_BASE` (an endpoint for every judge call), `ASIBENCH_JUDGE_API_KEY_ENV` (the
*name* of the variable that holds its key, never the key) and `ASIBENCH_JUDGE_API_PROTOCOL`
(`native`: the model string picks the provider's wire protocol; `openai`: one OpenAI-compatible
gateway, sent the canonical model id). Without a base, each provider's public endpoint is used
with its conventional key variable. A task's own `api_base`/`api_key` are never used: private
references go only to the endpoint the operator chose.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from scoring.engine.judge_models import PROTOCOLS, JudgeModelError, model_provider, resolve_model

BASE_ENV = "ASIBENCH_JUDGE_API_BASE"
KEY_ENV_ENV = "ASIBENCH_JUDGE_API_KEY_ENV"
PROTOCOL_ENV = "ASIBENCH_JUDGE_API_PROTOCOL"
PROVIDER_BASES = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/openai",
    "openrouter": "https://openrouter.ai/api/v1",
}
PROVIDER_KEY_ENVS = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "openrouter": ("OPENROUTER_API_KEY",),
}
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class JudgeConfigurationError(ValueError):
    """The judge settings cannot reach a model (missing key, bad URL, unknown provider)."""


@dataclass(frozen=True)
class Route:
    """One judge call's destination. `resolved` is the official model string (what results record)."""

    wire: str  # "openai" (chat completions) or "anthropic" (messages)
    base_url: str
    model: str
    resolved: str
    provider: str
    key_env: str
    api_key: str = field(repr=False)
    # OpenAI's own API takes max_completion_tokens (its reasoning models refuse max_tokens);
    # gateways and compatible servers take max_tokens, as the official client sends.
    completion_tokens_field: str = "max_tokens"


def checked_base(api_base: str) -> str:
    if any(ch.isspace() or ord(ch) < 0x20 for ch in api_base):
        raise JudgeConfigurationError("the judge API base must not contain whitespace or control characters")
    try:
        parts = urlsplit(api_base)
        _ = parts.port
    except ValueError as exc:
        raise JudgeConfigurationError(f"the judge API base is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise JudgeConfigurationError("the judge API base must be an absolute http(s) URL")
    if parts.username is not None or parts.password is not None:
        raise JudgeConfigurationError(f"the judge API base must not contain credentials; use {KEY_ENV_ENV}")
    if parts.query or parts.fragment:
        raise JudgeConfigurationError("the judge API base must not contain a query string or fragment")
    return api_base.rstrip("/")


@dataclass(frozen=True)
class JudgeEndpoint:
    api_base: str | None = None
    api_key_env: str | None = None
    api_protocol: str | None = None
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> JudgeEndpoint:
        """The settings in `environ`, checked as the official client checks them (a base needs a
        protocol and a key variable, and that variable must be set)."""
        base = (environ.get(BASE_ENV) or "").strip() or None
        key_env = (environ.get(KEY_ENV_ENV) or "").strip() or None
        protocol = (environ.get(PROTOCOL_ENV) or "").strip().lower() or None
        if key_env is not None and not _ENV_NAME.match(key_env):
            raise JudgeConfigurationError(f"{KEY_ENV_ENV} must name an environment variable (such as "
                                          "OPENAI_API_KEY), never hold the key itself")
        if protocol is not None and protocol not in PROTOCOLS:
            raise JudgeConfigurationError(f"{PROTOCOL_ENV} must be native or openai, got {protocol!r}")
        if base is not None:
            base = checked_base(base)
            if protocol is None:
                raise JudgeConfigurationError(f"{PROTOCOL_ENV} is required when {BASE_ENV} is set")
            if key_env is None:
                raise JudgeConfigurationError(f"{KEY_ENV_ENV} is required when {BASE_ENV} is set")
        if key_env is not None and not (environ.get(key_env) or "").strip():
            raise JudgeConfigurationError(f"the variable named by {KEY_ENV_ENV} ({key_env}) is unset or empty")
        return cls(api_base=base, api_key_env=key_env, api_protocol=protocol, environ=dict(environ))

    def describe(self) -> str:
        if self.api_base:
            return f"{self.api_base} ({self.api_protocol} protocol, key from {self.api_key_env})"
        return "each provider's public endpoint (keys from " + ", ".join(
            sorted({name for names in PROVIDER_KEY_ENVS.values() for name in names})) + ")"

    def configured(self) -> bool:
        """Whether any judge call could be made: an endpoint, or at least one provider key."""
        return bool(self.api_base) or any((self.environ.get(name) or "").strip()
                                          for names in PROVIDER_KEY_ENVS.values() for name in names)

    def _key(self, names: tuple[str, ...]) -> tuple[str, str] | None:
        for name in names:
            value = (self.environ.get(name) or "").strip()
            if value:
                return name, value
        return None

    def route(self, model: str) -> Route:
        """Where a judge configured with `model` is called; JudgeConfigurationError when nowhere."""
        try:
            resolved = resolve_model(model, self.api_protocol)
        except JudgeModelError as exc:
            raise JudgeConfigurationError(str(exc)) from None
        if self.api_base and self.api_protocol == "openai":
            found = self._key((self.api_key_env or "",))
            if found is None:
                raise JudgeConfigurationError(f"the variable named by {KEY_ENV_ENV} is unset or empty")
            return Route("openai", self.api_base, resolved[len("openai/"):], resolved, "gateway", *found)
        try:
            provider, model_id = model_provider(resolved)
        except JudgeModelError as exc:
            raise JudgeConfigurationError(str(exc)) from None
        wire = "anthropic" if provider == "anthropic" else "openai"
        if self.api_base:
            found = self._key((self.api_key_env or "",))
            base = self.api_base
        else:
            found = self._key((self.api_key_env,) if self.api_key_env else PROVIDER_KEY_ENVS[provider])
            base = PROVIDER_BASES[provider]
        if found is None:
            raise JudgeConfigurationError(f"no API key for {provider} judges: set "
                                          f"{' or '.join(PROVIDER_KEY_ENVS[provider])}, or {BASE_ENV} with "
                                          f"{KEY_ENV_ENV} and {PROTOCOL_ENV}")
        tokens_field = "max_completion_tokens" if provider == "openai" and not self.api_base else "max_tokens"
        return Route(wire, base, model_id, resolved, provider, *found, completion_tokens_field=tokens_field)
