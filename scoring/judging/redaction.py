"""Secrets out of everything a judge returns, before it is stored, logged or handed anywhere.

A judge's output is not trusted to be free of secrets: an agent judge runs with its key in its
environment and obeys what the judged files ask ("print your environment"), and a gateway may echo
the credentials a call came with. So every reply, error and log line of every judge kind passes
`Redactor.value` first (`scoring.judge_services` on the worker, `scoring.judging.local` in the CLI).

Two nets: the exact values of the secrets the process holds (`held_secrets`: variables whose names
say they hold one, the variables the judge settings name, passwords in URLs, and what the caller
adds, such as Django's SECRET_KEY), and the usual shapes of keys and tokens, for secrets it does not
know (a CLI's own login, a token an endpoint hands out).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

REDACTED = "<redacted>"
# Shorter values are not secrets worth the name, and replacing them would mangle ordinary text.
MIN_SECRET_CHARS = 8
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|AUTH|COOKIE|SESSION|DSN|PRIVATE)",
                          re.IGNORECASE)
# Variables whose value names another variable (ASIBENCH_JUDGE_API_KEY_ENV) or a place
# (ASIBENCH_CREDENTIALS_DIR) hold no secret, nor do counts (ASIBENCH_JUDGE_DAILY_TOKENS=20000000).
_NAME_HOLDER = re.compile(r"_(ENV|DIR|PATH|FILE)$", re.IGNORECASE)
_NOT_A_SECRET = re.compile(r"^[0-9.,_/:\-]*$")
_SHAPES = (
    # OpenAI (sk-, sk-proj-), Anthropic (sk-ant-), OpenRouter (sk-or-v1-) and most gateways' keys
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}"),  # Google / Gemini API keys
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),  # GitHub tokens
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{30,}"),  # Hugging Face tokens
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),  # Slack tokens
    re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),  # JWTs
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.DOTALL),
)
# What follows a word that announces a secret: `Bearer …`, `x-api-key: …`, `OPENAI_API_KEY=…` (a value
# with a letter in it: `"input_tokens": 123456789` is a count).
_ANNOUNCED = (
    re.compile(r"(?i)(\b(?:bearer|basic|token)\s+)[A-Za-z0-9._~+/=\-]{12,}"),
    re.compile(r"(?i)(\b[A-Za-z0-9_\-]*(?:api[_\-]?key|secret|token|password|passwd|credential)[A-Za-z0-9_\-]*"
               r"[\"']?\s*[:=]\s*[\"']?)(?!<redacted>)(?=[^\s\"',;]*[A-Za-z])[^\s\"',;]{8,}"),
)
# The password of a URL with credentials (postgres://user:password@host, redis://:password@host).
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^\s:/@]*:)[^\s@/]+(@)", re.IGNORECASE)


def held_secrets(environ: Mapping[str, str], *, named: Iterable[str] = (), extra: Iterable[str] = ()) -> set[str]:
    """The secret values in `environ`: of variables whose names say they hold one, of the variables in
    `named` (whatever their names), the passwords of URLs in any variable, and `extra`."""
    found = {str(value) for value in extra if value}
    wanted = {name for name in named if name}
    for name, value in environ.items():
        if not value:
            continue
        if name in wanted or (_SECRET_NAME.search(name) and not _NAME_HOLDER.search(name)
                              and not _NOT_A_SECRET.match(value.strip())):
            found.add(value.strip())
        if "://" in value:
            try:
                password = urlsplit(value.strip()).password
            except ValueError:
                password = None
            if password:
                found.update({password, unquote(password)})
    return {value for value in found if len(value) >= MIN_SECRET_CHARS}


class Redactor:
    """Replaces the given secret values, then anything shaped like a key, with `<redacted>`."""

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        self.secrets = sorted({s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)

    def text(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        for shape in _SHAPES:
            text = shape.sub(REDACTED, text)
        for announced in _ANNOUNCED:
            text = announced.sub(lambda m: m.group(1) + REDACTED, text)
        return _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)

    def value(self, value: Any) -> Any:
        """`value` with every string in it (keys of mappings too) redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value


def judge_redactor(environ: Mapping[str, str], *, extra: Iterable[str] = ()) -> Redactor:
    """The redactor of a process that asks judges: every secret in `environ`, including the variables
    the judge settings name (`ASIBENCH_JUDGE_API_KEY_ENV`, `ASIBENCH_AGENT_JUDGE_*_KEY_ENV`: any name),
    and `extra`."""
    named = [value.strip() for name, value in environ.items() if name.upper().endswith("_KEY_ENV") and value]
    return Redactor(held_secrets(environ, named=named, extra=extra))
