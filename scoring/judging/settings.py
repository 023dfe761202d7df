"""The judges' settings, read in one place from an environment: by `config/settings.py` for the Portal's
workers and by local scoring (the CLI's `score`, `validate`, `difficulty-check`) from the process environment.
Pure: no Django.

The chat endpoint's settings are `endpoint.JudgeEndpoint.from_environment`; the agent judge's (which CLI
on which search path, each CLI's own endpoint and key variable, the most seconds a run may take) are here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from scoring.sandbox.limits import AGENT_JUDGE_MAX_TIMEOUT

from .endpoint import JudgeConfigurationError

# Rounds of sandbox → judges → sandbox per task: one for judge gates, one for the scoring entries, one for a
# custom scorer whose judge prompt depends on an earlier reply.
JUDGE_ROUNDS = 3
MAX_TIMEOUT_ENV = "ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT"
MAX_TIMEOUT_FLOOR = 60
# Where the agent judges' CLIs are looked for on a Portal's worker (the CLI's local scoring uses PATH).
AGENT_JUDGE_SERVER_PATH = "/usr/local/bin:/usr/bin:/bin"
# Each CLI's endpoint and the variable holding its key, by agent (ASIBENCH_AGENT_JUDGE_<NAME>_{BASE_URL,KEY_ENV}).
_AGENT_DEFAULTS = {"codex": ("CODEX", "https://api.openai.com/v1", "OPENAI_API_KEY"),
                   "claude_code": ("CLAUDE", "https://api.anthropic.com", "ANTHROPIC_API_KEY")}


@dataclass(frozen=True)
class AgentJudgeSettings:
    search_path: str
    base_urls: Mapping[str, str]
    key_envs: Mapping[str, str]
    max_timeout: int
    """The most seconds an agent judge may run, whatever its task's `timeout` says (task YAML never raises
    a limit); catalog load and pre-submit say when a task asks for more."""


def agent_judge_max_timeout(environ: Mapping[str, str]) -> int:
    """ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT (at least 60 s), or the default; JudgeConfigurationError when it is not
    a whole number of seconds or below the floor."""
    raw = (environ.get(MAX_TIMEOUT_ENV) or "").strip()
    if not raw:
        return AGENT_JUDGE_MAX_TIMEOUT
    try:
        value = int(raw)
    except ValueError:
        raise JudgeConfigurationError(f"{MAX_TIMEOUT_ENV} must be a whole number of seconds, got {raw!r}") from None
    if value < MAX_TIMEOUT_FLOOR:
        raise JudgeConfigurationError(f"{MAX_TIMEOUT_ENV} must be >= {MAX_TIMEOUT_FLOOR}, got {value}")
    return value


def agent_judge_settings(environ: Mapping[str, str], *, default_search_path: str) -> AgentJudgeSettings:
    def setting(name: str, default: str) -> str:
        return (environ.get(f"ASIBENCH_AGENT_JUDGE_{name}") or "").strip() or default

    return AgentJudgeSettings(
        search_path=setting("PATH", default_search_path),
        base_urls={agent: setting(f"{name}_BASE_URL", url) for agent, (name, url, _) in _AGENT_DEFAULTS.items()},
        key_envs={agent: setting(f"{name}_KEY_ENV", key) for agent, (name, _, key) in _AGENT_DEFAULTS.items()},
        max_timeout=agent_judge_max_timeout(environ))
