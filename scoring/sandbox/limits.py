"""The limits of every kind of sandboxed run, in one place.

The server's kinds take their figures from the Portal's settings, passed in by the caller (this
package imports no Django): scoring a result, generating a task's instances and validating a
proposal. An agent run by `asibench run` takes its time limit from the command line. A task's own
YAML never raises any of them.
"""

from __future__ import annotations

import math
import os
from typing import Any

from .base import Limits
from .runtime import python_runtime_env

# Per-file caps: a scorer writes little; a generator writes instances; an agent whatever it needs.
SCORING_MAX_FILE_BYTES = 256 << 20
GENERATION_MAX_FILE_BYTES = 512 << 20
SCORING_MAX_PROCESSES = 32
# A result waiting for its judges carries their requests on its line (prompts of up to max_chars a file).
SCORING_OUTPUT_CAP = 8 << 20

AGENT_MEMORY_BYTES = 32 << 30  # an address-space cap: JS runtimes reserve far more than they use
AGENT_MAX_PROCESSES = 1024
AGENT_MAX_FILE_BYTES = 8 << 30
AGENT_OUTPUT_CAP = 32 << 20

# An agent judge's time: the task's `timeout` (official default 300 s), never above the server's
# ceiling (ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT on the Portal and for the CLI's local scoring).
AGENT_JUDGE_DEFAULT_TIMEOUT = 300
AGENT_JUDGE_MAX_TIMEOUT = 1800
# An agent judge's CLI (node, its model client) needs more room than a scorer: at least this much memory.
AGENT_JUDGE_MIN_MEMORY_BYTES = 8 << 30


def scoring_limits(settings: Any) -> Limits:
    """One scoring sandbox (the engine on one instance's results)."""
    return Limits(
        wall_clock_seconds=settings.SCORING_TIMEOUT_SECONDS,
        cpu_seconds=settings.SCORING_TIMEOUT_SECONDS,
        memory_bytes=settings.SCORING_MEMORY_BYTES,
        max_processes=SCORING_MAX_PROCESSES,
        max_file_bytes=SCORING_MAX_FILE_BYTES,
        network=False,
        env=python_runtime_env(),
        max_output_bytes=SCORING_OUTPUT_CAP,
    )


def batch_scoring_limits(settings: Any, *, jobs: int, max_scratch_bytes: int) -> Limits:
    """One scoring sandbox that scores `jobs` results in turn (`score-batch`): its time and output scale with
    the number of results; memory and processes stay per process, since the results are scored one at a time."""
    single = scoring_limits(settings)
    return single.replace(wall_clock_seconds=single.wall_clock_seconds * jobs, cpu_seconds=single.cpu_seconds * jobs,
                          max_output_bytes=single.max_output_bytes * jobs, max_scratch_bytes=max_scratch_bytes)


def generation_limits(settings: Any, timeout_seconds: int | None = None) -> Limits:
    """One run of an author's generator. `timeout_seconds` defaults to the cap for proposals'
    generators; a maintainer's catalog load passes its own, larger one
    (CATALOG_GENERATION_TIMEOUT_SECONDS): some official generators are slow."""
    timeout = timeout_seconds or settings.GENERATION_TIMEOUT_SECONDS
    return Limits(
        wall_clock_seconds=timeout,
        cpu_seconds=timeout,
        memory_bytes=settings.SANDBOX_MEMORY_BYTES,
        max_processes=settings.SANDBOX_MAX_PROCESSES,
        max_file_bytes=GENERATION_MAX_FILE_BYTES,
        max_scratch_bytes=settings.SANDBOX_SCRATCH_BYTES,
        network=False,
    )


def proposal_validation_limits(settings: Any) -> Limits:
    """The sealed `asibench validate --pre-submit` of a proposal (it runs the author's generator)."""
    return generation_limits(settings).replace(
        wall_clock_seconds=settings.PROPOSAL_VALIDATION_TIMEOUT_SECONDS,
        cpu_seconds=settings.PROPOSAL_VALIDATION_TIMEOUT_SECONDS,
        env=python_runtime_env(),
    )


def agent_limits(timeout: float, *, network: bool, env: dict[str, str]) -> Limits:
    """An agent's command under `asibench run`: its wall clock is the run's timeout, its CPU time
    that much on every core (plus a minute to wind down)."""
    return Limits(
        wall_clock_seconds=timeout,
        cpu_seconds=int(timeout * (os.cpu_count() or 1)) + 60,
        memory_bytes=AGENT_MEMORY_BYTES,
        max_processes=AGENT_MAX_PROCESSES,
        max_file_bytes=AGENT_MAX_FILE_BYTES,
        network=network,
        env=env,
        max_output_bytes=AGENT_OUTPUT_CAP,
    )


def agent_judge_timeout(requested: Any, ceiling: float) -> float:
    """The seconds an agent judge gets: the task's `timeout`, clamped to `ceiling`; what is not a
    positive finite number counts as the official default."""
    try:
        timeout = float(requested)
    except (TypeError, ValueError):
        timeout = AGENT_JUDGE_DEFAULT_TIMEOUT
    if isinstance(requested, bool) or not math.isfinite(timeout) or timeout <= 0:
        timeout = AGENT_JUDGE_DEFAULT_TIMEOUT
    return min(timeout, float(ceiling))


def agent_judge_limits(requested_timeout: Any, *, ceiling: float, env: dict[str, str], memory_bytes: int) -> Limits:
    """An agent judge's CLI (scoring.judging.agent): the task's judge timeout within the server's
    `ceiling`, no network (its one way out is the egress proxy's socket), room for a JS runtime's
    threads and address space."""
    timeout = agent_judge_timeout(requested_timeout, ceiling)
    return Limits(
        wall_clock_seconds=timeout,
        cpu_seconds=int(timeout) * 2 + 10,
        memory_bytes=memory_bytes,
        max_processes=256,
        max_file_bytes=SCORING_MAX_FILE_BYTES,
        network=False,
        env=env,
        max_output_bytes=1 << 20,
        max_scratch_bytes=1 << 30,
    )
