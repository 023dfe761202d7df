"""Name → backend. `bwrap` is the default; `none` exists only when asked for by name. The Portal's own runs
(scoring, generation, proposal checks, task health) take `server_backend(settings.SCORING_SANDBOX)`: the one
place that refuses a backend which cannot enforce the limits on this host."""

from __future__ import annotations

import logging
from collections.abc import Callable

from .base import BackendUnavailable, SandboxBackend, SandboxError, UnknownBackend
from .bwrap import BwrapBackend
from .docker_backend import DockerBackend
from .modes import SandboxMode
from .unsandboxed import NoneBackend

logger = logging.getLogger(__name__)

DEFAULT_BACKEND = "bwrap"

BACKENDS: dict[str, Callable[[], SandboxBackend]] = {
    "bwrap": BwrapBackend,
    "docker": DockerBackend,
    # The only place `explicit=True` is passed: naming "none" is the explicit request.
    "none": lambda: NoneBackend(explicit=True),
}


def get_backend(name: str = DEFAULT_BACKEND) -> SandboxBackend:
    try:
        factory = BACKENDS[name]
    except KeyError:
        raise UnknownBackend(
            f"unknown sandbox backend {name!r}; choose one of {', '.join(sorted(BACKENDS))}"
        ) from None
    return factory()


def server_backend(name: str) -> SandboxBackend:
    """The backend `name` for the Portal's own runs. One that cannot enforce the server's limits on this host is
    refused (BackendUnavailable, with why), never run unlimited."""
    backend = get_backend(name)
    problem = backend.mode().problem
    if problem is not None:
        raise BackendUnavailable(problem)
    return backend


def server_mode(name: str) -> SandboxMode:
    """The mode the Portal's own runs take on this host with backend `name`, with why they cannot run here, if
    they cannot: what a worker prints at start and records with its heartbeat. Never raises."""
    try:
        return get_backend(name).mode()
    except SandboxError as exc:  # bwrap not installed, no seccomp table for this machine, …
        return SandboxMode(f"{name} (unavailable)", str(exc))
    except Exception as exc:  # a check that broke is a problem to report, never a worker that stops beating
        logger.exception("the sandbox check failed")
        return SandboxMode(f"{name} (unavailable)", f"the sandbox check failed: {exc!r}")
