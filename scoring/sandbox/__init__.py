"""Run untrusted commands: one interface, three backends (bwrap, docker, none).

    backend = get_backend("bwrap")
    result = backend.run(argv, workdir, read_only_mounts, Limits(...))

`workdir` is the only writable path; it is mounted at its own absolute path inside and is
the working directory. Pure Python: no Django imports.

The names below load on first use: the scoring engine imports `scoring.sandbox.outputs` inside
every sandbox, where loading the backends too cost each sandbox's start 17 ms for nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import (
        BackendUnavailable,
        Limits,
        Mount,
        MountError,
        SandboxBackend,
        SandboxError,
        SandboxResult,
        UnknownBackend,
    )
    from .registry import BACKENDS, DEFAULT_BACKEND, get_backend, server_backend, server_mode
    from .runtime import python_runtime_env, python_runtime_mounts

_HOMES = {
    **dict.fromkeys(("BackendUnavailable", "Limits", "Mount", "MountError", "SandboxBackend", "SandboxError",
                     "SandboxResult", "UnknownBackend"), "base"),
    **dict.fromkeys(("BACKENDS", "DEFAULT_BACKEND", "get_backend", "server_backend", "server_mode"), "registry"),
    **dict.fromkeys(("python_runtime_env", "python_runtime_mounts"), "runtime"),
}

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "BackendUnavailable",
    "Limits",
    "Mount",
    "MountError",
    "SandboxBackend",
    "SandboxError",
    "SandboxResult",
    "UnknownBackend",
    "get_backend",
    "python_runtime_env",
    "python_runtime_mounts",
    "server_backend",
    "server_mode",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
