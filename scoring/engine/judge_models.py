"""Judge model strings: how the official ones route, and what makes a judge entry well-formed.

`resolve_model` follows the official 0.2.0 rules (short names, ``google/`` ↔ ``gemini/``, the
``openai`` protocol's canonical ids); `model_provider` says which provider (and so which wire
protocol and key) a resolved string names. `judge_config_problems` is the pre-submit check of a
task's judge entries: a model that routes, a usable rubric, sane numbers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

# The official short names (contract §2.12).
SUPPORTED_MODELS: dict[str, str] = {
    "gemini-3.1-pro-preview": "gemini/gemini-3.1-pro-preview",
    "claude-opus-4-6": "anthropic/claude-opus-4-6",
    "gpt-5.5": "openai/gpt-5.5",
    "openrouter/gpt-5.5": "openrouter/openai/gpt-5.5",
    "openrouter/claude-opus-4-6": "openrouter/anthropic/claude-opus-4-6",
    "openrouter/gemini-3.1-pro-preview": "openrouter/google/gemini-3.1-pro-preview",
}
DEFAULT_MODEL = "openai/gpt-5.5"
AGENT_DEFAULT_MODELS = {"codex": "gpt-5.6-sol", "claude_code": "claude-opus-4-6"}
PROTOCOLS = ("native", "openai")
JUDGE_SCORERS = ("llm_judge", "multimodal", "agent_judge")
TOOL_MODES = ("restricted", "search", "unrestricted")
MULTIMODAL_MODES = ("vlm_judge", "pixel_sim")
PIXEL_METRICS = ("ssim", "psnr")
RUBRIC_MAX_CHARS = 50_000

_BARE_OPENAI = re.compile(r"^(gpt-|chatgpt-|o\d)")
_PREFIXES = {"openai/": "openai", "anthropic/": "anthropic", "gemini/": "gemini", "openrouter/": "openrouter"}


class JudgeModelError(ValueError):
    pass


def _canonical_for_gateway(model: str) -> str:
    """The id a generic OpenAI-compatible gateway receives (the official `openai` protocol)."""
    resolved = SUPPORTED_MODELS.get(model, model)
    for prefix, replacement in (("openrouter/", ""), ("gemini/", "google/"), ("hosted_vllm/", ""),
                                ("openai/", "")):
        if resolved.startswith(prefix):
            return replacement + resolved[len(prefix):]
    if resolved.startswith("gemini-"):
        return "google/" + resolved
    return resolved


def resolve_model(model: str, protocol: str | None = None) -> str:
    """The model string the official engine hands its client, for `protocol` (None = native)."""
    protocol = protocol.strip().lower() if protocol is not None else None
    if protocol == "openai":
        return "openai/" + _canonical_for_gateway(model)
    if protocol not in (None, "native"):
        raise JudgeModelError(f"unsupported judge API protocol {protocol!r} (native or openai)")
    resolved = SUPPORTED_MODELS.get(model, model)
    if resolved.startswith("google/"):
        return "gemini/" + resolved[len("google/"):]
    if resolved.startswith("gemini-"):
        return "gemini/" + resolved
    return resolved


def model_provider(resolved: str) -> tuple[str, str]:
    """(provider, model id at that provider) of a resolved string; JudgeModelError if none fits.

    Providers: openai, anthropic, gemini, openrouter. Bare ids follow the provider their names
    belong to (``gpt-5.4`` is OpenAI's, ``claude-…`` Anthropic's), as the official client infers.
    """
    for prefix, provider in _PREFIXES.items():
        if resolved.startswith(prefix) and len(resolved) > len(prefix):
            return provider, resolved[len(prefix):]
    if _BARE_OPENAI.match(resolved):
        return "openai", resolved
    if resolved.startswith("claude-"):
        return "anthropic", resolved
    raise JudgeModelError(f"judge model {resolved!r} names no provider this service can call "
                          "(use openai/…, anthropic/…, gemini/…, google/… or openrouter/…)")


def _judge_entries(evaluation: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for key in ("gates", "scoring"):
        entries = evaluation.get(key) if isinstance(evaluation, dict) else None
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            if not isinstance(entry, dict):
                continue
            config: dict[str, Any] = entry["config"] if isinstance(entry.get("config"), dict) else {}
            where = f"{key}[{i}] ({entry.get('scorer')})"
            if entry.get("scorer") in JUDGE_SCORERS:
                yield where, {"scorer": entry["scorer"], **config}
            for j, sub in enumerate(config.get("sub_scorers") or [] if entry.get("scorer") == "composite" else []):
                if isinstance(sub, dict) and sub.get("scorer") in JUDGE_SCORERS:
                    sub_config: dict[str, Any] = sub["config"] if isinstance(sub.get("config"), dict) else {}
                    yield f"{where}.sub_scorers[{j}] ({sub['scorer']})", {"scorer": sub["scorer"], **sub_config}


def has_judges(evaluation: dict[str, Any]) -> bool:
    """Whether any entry needs a model (pixel_sim needs none)."""
    return any(not (c["scorer"] == "multimodal" and c.get("mode") == "pixel_sim")
               for _, c in _judge_entries(evaluation))


def _templated(value: Any) -> bool:
    return isinstance(value, str) and value.strip().startswith("{") and value.strip().endswith("}")


def _number(config: dict[str, Any], key: str, default: Any, where: str, problems: list[str], *,
            positive: bool = False, integer: bool = False) -> None:
    value = config.get(key, default)
    if _templated(value):
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or (integer and not isinstance(value, int)):
        problems.append(f"{where}: {key} must be {'an integer' if integer else 'a number'}, got {value!r}")
    elif positive and value <= 0:
        problems.append(f"{where}: {key} must be positive, got {value!r}")


def _rubric(config: dict[str, Any], where: str, problems: list[str], *, required: bool) -> None:
    if "rubric" not in config:
        if required:
            problems.append(f"{where}: a rubric is required")
        return
    rubric = config["rubric"]
    if not isinstance(rubric, str) or not rubric.strip():
        problems.append(f"{where}: rubric must be a non-empty text")
    elif len(rubric) > RUBRIC_MAX_CHARS:
        problems.append(f"{where}: rubric is {len(rubric)} characters, more than {RUBRIC_MAX_CHARS}")


def judge_config_problems(evaluation: dict[str, Any]) -> list[str]:
    """What makes a task's judge entries unusable: a model no provider serves, a missing or empty
    rubric, a file name missing, numbers out of range. Templated values (``'{…}'``) are not read."""
    problems: list[str] = []
    for where, config in _judge_entries(evaluation):
        scorer = config["scorer"]
        if config.get("api_key") or config.get("api_base"):
            problems.append(f"{where}: api_base/api_key must not be in a task (the service's own judge endpoint "
                            "is used; a task never names one)")
        if scorer == "agent_judge":
            agent = config.get("agent", "codex")
            if agent not in AGENT_DEFAULT_MODELS:
                problems.append(f"{where}: agent {agent!r} is not codex or claude_code")
            _rubric(config, where, problems, required=True)
            _number(config, "timeout", 300, where, problems, positive=True)
            if isinstance(config.get("timeout", 300), int | float) and config.get("timeout", 300) < 60:
                problems.append(f"{where}: timeout {config.get('timeout')} s is below the minimum of 60 s")
            if config.get("tool_mode", "unrestricted") not in TOOL_MODES:
                problems.append(f"{where}: tool_mode {config.get('tool_mode')!r} is not one of {', '.join(TOOL_MODES)}")
            _number(config, "num_judges", 3, where, problems, positive=True, integer=True)
            _number(config, "max_score_value", 10, where, problems, positive=True)
            _number(config, "threshold", 0.5, where, problems)
            continue
        mode = config.get("mode", "vlm_judge") if scorer == "multimodal" else None
        if mode is not None and mode not in MULTIMODAL_MODES:
            problems.append(f"{where}: mode {mode!r} is not vlm_judge or pixel_sim")
            continue
        file_key = "pred_file" if scorer == "llm_judge" else "pred_image"
        if not isinstance(config.get(file_key), str) or not config[file_key]:
            problems.append(f"{where}: {file_key} is required")
        if mode == "pixel_sim":
            if not isinstance(config.get("ref_image"), str) or not config["ref_image"]:
                problems.append(f"{where}: ref_image is required for pixel_sim")
            if config.get("pixel_metric", "ssim") not in PIXEL_METRICS:
                problems.append(f"{where}: pixel_metric {config.get('pixel_metric')!r} is not ssim or psnr")
            _number(config, "threshold", 0.8, where, problems)
            continue
        model = config.get("model", DEFAULT_MODEL)
        if not isinstance(model, str) or not model.strip():
            problems.append(f"{where}: model must be a non-empty text")
        else:
            try:
                model_provider(resolve_model(model))
            except JudgeModelError as exc:
                problems.append(f"{where}: {exc}")
        _rubric(config, where, problems, required=False)
        _number(config, "num_judges", 1, where, problems, positive=True, integer=True)
        _number(config, "max_score_value", 10, where, problems, positive=True)
        _number(config, "max_tokens", 1024, where, problems, positive=True, integer=True)
        _number(config, "temperature", 0.0, where, problems)
        _number(config, "threshold", 0.5, where, problems)
        if scorer == "llm_judge":
            _number(config, "max_chars", 10000, where, problems, positive=True, integer=True)
    return problems


def agent_judge_timeout_notes(evaluation: dict[str, Any], ceiling: float, whose: str = "this server's") -> list[str]:
    """What a task's agent_judge entries ask beyond the `ceiling` on a judge's time (the server's
    ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT): a task's YAML never raises a sandbox limit, so they are clamped."""
    notes = []
    for where, config in _judge_entries(evaluation):
        timeout = config.get("timeout", 300)
        if config["scorer"] != "agent_judge" or isinstance(timeout, bool) or not isinstance(timeout, int | float):
            continue
        if timeout > ceiling:
            notes.append(f"{where}: agent_judge timeout {timeout:g} s is above {whose} ceiling of {ceiling:g} s "
                         f"(ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT); the judge is stopped at {ceiling:g} s")
    return notes
