"""The figures guides quote (limits, quotas, policies), read from settings each time a guide renders.

A guide writes ``{{ figure:name }}``. Only the names in FIGURES exist, so Markdown can quote a
setting but reach nothing else, and a misspelt name fails the guide tests instead of printing a
blank. Prompt placeholders such as ``{{ n_bodies }}`` carry no ``figure:`` prefix and stay as written.
"""

import re
from collections.abc import Callable
from typing import Any

from django.conf import settings

from contracts.difficulty import DIFFICULTY_THRESHOLD
from contracts.task_files import (
    ALLOWED_EXTENSIONS,
    MAX_FILE_BYTES,
    MAX_NAME_CHARS,
    MAX_TASK_BYTES,
    MAX_TASK_FILES,
)
from portal.submissions.bundle_verify import MAX_ATTEMPT, MAX_COMPONENT_BYTES
from portal.submissions.prices import price_table
from portal.submissions.scanners import SCANNER_VERSION
from portal.submissions.services import bundle_limits
from portal.submissions.usage import MAX_CALL_RECORDS
from scoring.engine.safe_yaml import MAX_DEPTH, MAX_NODES

_PLACEHOLDER = re.compile(r"\{\{\s*figure:([a-z0-9_]+)\s*\}\}")
_PERIODS = {"s": "second", "m": "minute", "h": "hour", "d": "day"}


class UnknownFigure(LookupError):
    pass


def size(n: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n / factor:.4g} {unit}"
    return f"{n} bytes"


def count(n: float) -> str:
    return f"{n:,.0f}" if float(n).is_integer() else f"{n:,}"


def hours(n: int) -> str:
    if n % 24 == 0:
        days = n // 24
        return f"{n} hours ({days} day{'s' if days != 1 else ''})"
    return f"{n} hour{'s' if n != 1 else ''}"


def rate(spec: str) -> str:
    """A DRF throttle rate such as ``30/hour`` or ``20/min``, in words."""
    number, _, period = spec.partition("/")
    return f"{number} per {_PERIODS.get(period[:1], period)}"


def _throttle_rates() -> dict[str, str]:
    framework: dict[str, Any] = settings.REST_FRAMEWORK
    return framework["DEFAULT_THROTTLE_RATES"]


def _modes(modes: list[str]) -> str:
    return " or ".join(f"`{mode}`" for mode in modes) or "none"


FIGURES: dict[str, Callable[[], str]] = {
    "bundle_max_size": lambda: size(bundle_limits().max_compressed_bytes),
    "bundle_max_uncompressed": lambda: size(bundle_limits().max_uncompressed_bytes),
    "bundle_max_members": lambda: count(bundle_limits().max_members),
    "bundle_max_ratio": lambda: count(bundle_limits().max_ratio),
    "bundle_ratio_grace": lambda: size(bundle_limits().ratio_grace_bytes),
    "bundle_max_file": lambda: size(bundle_limits().max_file_bytes),
    "bundle_max_result_json": lambda: size(bundle_limits().max_result_json_bytes),
    "bundle_max_name_bytes": lambda: count(bundle_limits().max_name_bytes),
    "bundle_max_path_depth": lambda: count(bundle_limits().max_path_depth),
    "bundle_max_name_component": lambda: count(MAX_COMPONENT_BYTES),
    "bundle_max_attempt": lambda: count(MAX_ATTEMPT),
    "quota_window": lambda: f"{settings.QUOTA_WINDOW_HOURS} hours",
    "scanner_version": lambda: SCANNER_VERSION,
    "scanner_result_bytes": lambda: size(settings.SCANNER_MAX_BYTES_PER_RESULT),
    "scanner_run_bytes": lambda: size(settings.SCANNER_MAX_BYTES_PER_RUN),
    "browser_upload_max": lambda: size(settings.BROWSER_UPLOAD_MAX_BYTES),
    "upload_rate": lambda: rate(_throttle_rates()["bundle_upload"]),
    "draft_ttl": lambda: hours(settings.DRAFT_TTL_HOURS),
    "confirms_per_day": lambda: count(settings.CONFIRMS_PER_DAY_LIMIT),
    "results_per_bundle": lambda: count(settings.RESULTS_PER_BUNDLE_LIMIT),
    "drafts_per_user": lambda: count(settings.DRAFTS_PER_USER),
    "draft_bytes_per_user": lambda: size(settings.DRAFT_BYTES_PER_USER),
    "confirms_per_day_site": lambda: count(settings.CONFIRMS_PER_DAY_SITE),
    "sandbox_policy": lambda: f"`{settings.SANDBOX_POLICY}`",
    "seed42_sandbox_modes": lambda: _modes(settings.DATASET_SANDBOX_MODES["seed42"]),
    "seed31415_sandbox_modes": lambda: _modes(settings.DATASET_SANDBOX_MODES["seed31415"]),
    "scoring_timeout": lambda: f"{settings.SCORING_TIMEOUT_SECONDS} seconds",
    "scoring_memory": lambda: size(settings.SCORING_MEMORY_BYTES),
    "scoring_retries": lambda: count(settings.SCORING_INFRA_RETRIES),
    "stuck_after": lambda: hours(settings.SCORING_STUCK_SECONDS // 3600) if settings.SCORING_STUCK_SECONDS % 3600 == 0
    else f"{settings.SCORING_STUCK_SECONDS} seconds",
    "difficulty_threshold": lambda: count(DIFFICULTY_THRESHOLD),
    "proposal_validations_per_day": lambda: count(settings.PROPOSAL_VALIDATIONS_PER_DAY),
    "proposal_validation_timeout": lambda: f"{settings.PROPOSAL_VALIDATION_TIMEOUT_SECONDS} seconds",
    "task_file_max": lambda: size(MAX_FILE_BYTES),
    "task_files_max_total": lambda: size(MAX_TASK_BYTES),
    "task_files_max_count": lambda: count(MAX_TASK_FILES),
    "task_path_max_chars": lambda: count(MAX_NAME_CHARS),
    "yaml_max_depth": lambda: count(MAX_DEPTH),
    "yaml_max_nodes": lambda: count(MAX_NODES),
    "task_file_types": lambda: " ".join(f"`{suffix}`" for suffix in sorted(ALLOWED_EXTENSIONS)),
    "board_confidence": lambda: f"{settings.BOARD_INTERVAL_CONFIDENCE:.0%}",
    "usage_mismatch": lambda: f"{settings.USAGE_MISMATCH_PERCENT} %",
    "consistency_min_runs": lambda: count(settings.CONSISTENCY_MIN_RUNS),
    "attempt_window": lambda: f"{settings.ATTEMPT_WINDOW_DAYS} days",
    "spot_sample": lambda: count(settings.SPOT_VALIDATION_SAMPLE),
    "spot_tolerance": lambda: f"{settings.SPOT_VALIDATION_TOLERANCE:g}",
    "priced_models": lambda: count(len(price_table().prices)),
    "max_call_records": lambda: count(MAX_CALL_RECORDS),
    "device_code_ttl": lambda: f"{settings.DEVICE_CODE_TTL_SECONDS // 60} minutes",
    "device_token_days": lambda: f"{settings.DEVICE_LOGIN_TOKEN_DAYS} days",
}


def fill_figures(text: str) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in FIGURES:
            raise UnknownFigure(f"no figure named {name!r}; known: {', '.join(sorted(FIGURES))}")
        return FIGURES[name]()

    return _PLACEHOLDER.sub(value, text)
