"""The label a custom (`--agent-cmd`) agent goes by: the run's "Agent" on the Portal and the start of
its suggested display name. The client records it; the Portal derives it the same way for bundles
that predate it, so both sides share this one rule.
"""

import shlex
from pathlib import PurePosixPath
from typing import Any

# `--agent-config` keys that name the agent, first match wins.
CONFIG_NAME_KEYS = ("agent", "agent_name", "name")
# How Portal drafts stored a custom agent before labels were short.
LEGACY_PREFIX = "agent-cmd: "
MAX_LABEL = 60


def _clip(text: str, limit: int = MAX_LABEL) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def configured_name(config: Any) -> str:
    """The agent's name from its `--agent-config`, or ""."""
    if not isinstance(config, dict):
        return ""
    for key in CONFIG_NAME_KEYS:
        value = config.get(key)
        if isinstance(value, str) and value.strip():
            return _clip(value)
    return ""


def short_command(cmd: str) -> str:
    """Program and script of a command, without paths or arguments: a checkout's absolute paths
    say nothing about the agent and make the label too long to show.

    `/repo/.venv/bin/python /repo/examples/agents/naive_agent.py --workspace {workspace}`
    becomes `python naive_agent.py`; `python -m pkg.agent …` keeps the module.
    """
    try:
        words = shlex.split(cmd)
    except ValueError:
        words = cmd.split()
    while words and "=" in words[0] and not words[0].startswith("-"):  # leading VAR=value assignments
        words = words[1:]
    if words and PurePosixPath(words[0]).name == "env":
        words = [w for w in words[1:] if "=" not in w or w.startswith("-")]
    if not words:
        return ""
    picked = [PurePosixPath(words[0]).name]
    rest = words[1:]
    if len(rest) >= 2 and rest[0] == "-m":
        picked += rest[:2]
    else:
        script = next((w for w in rest if not w.startswith("-") and "{" not in w), None)
        if script is not None and ("/" in script or "." in PurePosixPath(script).name):
            picked.append(PurePosixPath(script).name)
    return _clip(" ".join(picked))


def agent_label(*, agent_name: Any = None, cmd_template: Any = None, config: Any = None) -> str:
    """A run's agent label from its provenance: the recorded name, else the configured name,
    else the short form of the command."""
    if isinstance(agent_name, str) and agent_name.strip():
        return shown_label(agent_name)
    return configured_name(config) or (short_command(cmd_template) if isinstance(cmd_template, str) else "")


def shown_label(stored: str) -> str:
    """A label as stored, made fit to show: older drafts stored the whole command."""
    if stored.startswith(LEGACY_PREFIX):
        return short_command(stored[len(LEGACY_PREFIX):]) or _clip(stored)
    return _clip(stored, 200)
