"""Name → backend. `bwrap` is the default; `none` exists only when asked for by name."""

from __future__ import annotations

from collections.abc import Callable

from .base import SandboxBackend, UnknownBackend
from .bwrap import BwrapBackend
from .docker_backend import DockerBackend
from .unsandboxed import NoneBackend

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
