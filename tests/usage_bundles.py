"""Results that record their model calls, as each client writes them, for the cost and efficiency tests.

`claude_jsonl` is what a Claude-Code-style agent leaves in `_trajectory.jsonl` (one `assistant` event per call
with its message's `usage` and `model`, a final `result` event with the agent's own totals). From it:

- `ours`: the fields our `asibench run` writes (cli_client.running.run_records, called as the runner calls it):
  the call records inline (`agent_output.model_call_records`), their summary, and the agent's `cost` statement.
- `official`: the fields the official 0.2.0 client writes for its Claude Code adapter (runner/orchestrator.py
  `_save_result`): the `cost` block from the `result` event (tokens only, `estimated_cost_usd` 0.0), the
  call summary with `records_file` naming a sidecar the bundle never carries, and no inline records.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli_client.running import run_records as records
from cli_client.running.trajectory import trajectory_of

MODEL = "claude-sonnet-4-5-20250929"


@dataclass(frozen=True)
class Call:
    input: int = 1000
    output: int = 200
    cache_read: int = 5000
    cache_write: int = 2000
    model: str = MODEL


# Claude Sonnet 4.5 in portal/submissions/model_prices.toml: 3 / 15 USD per million, cache reads 0.30, writes 3.75.
def sonnet_cost(call: Call) -> float:
    return (call.input * 3 + call.output * 15 + call.cache_read * 0.30 + call.cache_write * 3.75) / 1e6


def claude_jsonl(calls: list[Call], *, stated_usd: float | None = None, stated_scale: float = 1.0) -> str:
    """The agent's trajectory; its `result` event states the totals (times `stated_scale`) and `stated_usd`."""
    events: list[dict[str, Any]] = [{"type": "system", "subtype": "init", "model": MODEL}]
    for n, call in enumerate(calls, 1):
        usage = {"input_tokens": call.input, "output_tokens": call.output,
                 "cache_read_input_tokens": call.cache_read, "cache_creation_input_tokens": call.cache_write}
        events.append({"type": "assistant", "timestamp": 1000.0 + n, "message": {
            "id": f"msg_{n:03d}", "model": call.model, "role": "assistant", "stop_reason": "tool_use",
            "content": [{"type": "text", "text": f"step {n}"},
                        {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": "python run.py"}}],
            "usage": usage}})
        events.append({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"t{n}", "content": "ok"}]}})
    total = {"input_tokens": int(sum(c.input for c in calls) * stated_scale),
             "output_tokens": int(sum(c.output for c in calls) * stated_scale),
             "cache_read_input_tokens": sum(c.cache_read for c in calls),
             "cache_creation_input_tokens": sum(c.cache_write for c in calls)}
    result: dict[str, Any] = {"type": "result", "subtype": "success", "num_turns": len(calls), "usage": total}
    if stated_usd is not None:
        result["total_cost_usd"] = stated_usd
    events.append(result)
    return "\n".join(json.dumps(e) for e in events) + "\n"


def ours(jsonl: str, base: str) -> dict[str, Any]:
    """What our runner adds to a result for this trajectory (runner.write_result)."""
    trajectory = trajectory_of(jsonl, Path("/nonexistent-workspace"), MODEL)
    fields: dict[str, Any] = {"agent_output": {
        "trajectory_summary": trajectory.summary,
        "model_call_observability": records.model_call_observability(trajectory.calls, f"{base}.model_calls.json"),
        "model_call_records": trajectory.calls}}
    if trajectory.stated_cost is not None:
        fields["cost"] = trajectory.stated_cost
    return fields


def official(jsonl: str, base: str) -> dict[str, Any]:
    """What the official client's orchestrator adds for its Claude Code adapter: no inline records."""
    trajectory = trajectory_of(jsonl, Path("/nonexistent-workspace"), MODEL)
    stated = trajectory.stated_cost
    fields: dict[str, Any] = {"agent_output": {
        "trajectory_summary": trajectory.summary,
        "model_call_observability": records.model_call_observability(trajectory.calls, f"{base}.model_calls.json")}}
    if stated is not None:
        fields["cost"] = {**stated, "estimated_cost_usd": 0.0}  # CostInfo's default: the adapter never sets it
    return fields


def not_recorded() -> dict[str, Any]:
    """A result of an agent that exposes no calls (the generic --agent-cmd adapter of either client)."""
    return {"agent_output": {"model_call_observability": records.model_call_observability()}}


def merge_into(result_path: Path, fields: dict[str, Any], *, seconds: float | None = None) -> None:
    result = json.loads(result_path.read_text())
    for key, value in fields.items():
        if key == "agent_output":
            result["agent_output"].update(value)
        else:
            result[key] = value
    if seconds is not None:
        result["execution_time_seconds"] = seconds
    result_path.write_text(json.dumps(result))


def usage_for(fields: dict[str, Any], seconds: float = 30.0) -> dict[str, Any]:
    """What intake keeps of a result with these fields (SubmissionEntry.usage), for runs built in the ORM."""
    from portal.submissions.prices import price_table
    from portal.submissions.usage import result_usage

    result: dict[str, Any] = {"execution_time_seconds": seconds, "agent_output": {},
                              "provenance": {"agent": {"config": {"model": MODEL}}}}
    merged = {**result, **{k: v for k, v in fields.items() if k != "agent_output"}}
    merged["agent_output"] = {**fields.get("agent_output", {})}
    return result_usage(merged, price_table())
