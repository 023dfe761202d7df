"""Run untrusted commands: one interface, three backends (bwrap, docker, none).

    backend = get_backend("bwrap")
    result = backend.run(argv, workdir, read_only_mounts, Limits(...))

`workdir` is the only writable path; it is mounted at its own absolute path inside and is
the working directory. Pure Python: no Django imports.
"""

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
