"""Whether a host or a bind address is this machine only (loopback), for the rule that Django's debug
page (settings, source, a request's data) is never shown to anyone else: `config/settings.py` refuses
DEBUG with public host names, `gunicorn.conf.py` refuses DEBUG on a bind others can reach, and
`portal.middleware.DebugLoopbackOnlyMiddleware` answers 403 to any other client while DEBUG is on."""

from __future__ import annotations

import ipaddress

# Django's test client's host name, which never leaves the process.
_LOCAL_NAMES = {"localhost", "testserver"}


def is_loopback_host(host: str) -> bool:
    """`localhost` (and names under it), `testserver`, or a loopback IP (127.0.0.0/8, ::1), bracketed or not."""
    name = host.strip().lower().rstrip(".")
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    if name.startswith("."):  # an ALLOWED_HOSTS suffix such as ".localhost"
        name = name[1:]
    if name in _LOCAL_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def bind_host(bind: str) -> str | None:
    """The host of a gunicorn `--bind` value (HOST, HOST:PORT, [IPv6]:PORT); None for a unix socket."""
    if bind.startswith("unix:"):
        return None
    if bind.startswith("["):
        return bind[1:bind.find("]")] if "]" in bind else bind
    if bind.count(":") == 1:
        return bind.split(":", 1)[0]
    return bind


def debug_bind_problem(binds: list[str]) -> str | None:
    """Why a server with DEBUG on must not listen on `binds` (None when every one is loopback or a unix
    socket): 0.0.0.0, a LAN or public address, a host name other than localhost, a socket handed in."""
    for bind in binds:
        if bind.startswith("fd://"):
            return f"it listens on {bind}, a socket handed in that may face anyone"
        host = bind_host(bind)
        if host is not None and not is_loopback_host(host):
            return f"it listens on {bind}, which other machines can reach"
    return None
