"""What a run declared about its agent's tools: the tool mode and whether external tools were enabled, as both
clients record them in each result's `provenance.agent` (`tool_mode`, `allow_external_tools`). Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

NOT_RECORDED = "not recorded"


def declared_tools(provenances: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """{"tool_modes": {mode: results}, "external_tools": {"enabled"|"disabled"|"not recorded": results},
    "enabled": results that enabled external tools, "summary": one line}."""
    modes: Counter[str] = Counter()
    external: Counter[str] = Counter()
    for provenance in provenances:
        agent = (provenance or {}).get("agent") or {}
        agent = agent if isinstance(agent, dict) else {}
        modes[str(agent.get("tool_mode") or NOT_RECORDED)] += 1
        allowed = agent.get("allow_external_tools")
        external[NOT_RECORDED if allowed is None else ("enabled" if allowed is True else "disabled")] += 1
    summary = "; ".join([
        "tool mode " + ", ".join(f"{mode} ×{n}" for mode, n in sorted(modes.items())),
        "external tools " + ", ".join(f"{state} ×{n}" for state, n in sorted(external.items())),
    ]) if modes else NOT_RECORDED
    return {"tool_modes": dict(sorted(modes.items())), "external_tools": dict(sorted(external.items())),
            "enabled": external.get("enabled", 0), "summary": summary}
