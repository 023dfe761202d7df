"""Which client made a result: `provenance.client` in each result.json, and how the Portal names it.

Both clients write `framework_version` "0.2.0" (the dataset policies check that field, so it stays),
so that field cannot tell them apart. Our `asibench run` adds `provenance.client = {"name", "version"}`;
the official 0.2.0 client writes no such key (and ignores it: it copies provenance verbatim into the
bundle's manifest). A result without it is labelled as the official client's.

The value arrives in hostile bundles: only short plain tokens are read, anything else is "unreadable".
"""

from __future__ import annotations

import re
from typing import Any

KEY = "client"
OFFICIAL_NAME = "asibench"
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,59}")
_VERSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_-]{0,39}")
UNREADABLE = ("(unreadable)", "")


def client_provenance(name: str, version: str) -> dict[str, str]:
    """The `provenance.client` value a client writes into each result."""
    return {"name": name, "version": version}


def recorded_client(provenance: Any) -> tuple[str, str] | None:
    """(name, version) a result's provenance records; None when it records none (the official client);
    UNREADABLE when the key is there but not a short plain name and version."""
    value = provenance.get(KEY) if isinstance(provenance, dict) else None
    if value is None:
        return None
    name = value.get("name") if isinstance(value, dict) else None
    version = value.get("version") if isinstance(value, dict) else None
    if not (isinstance(name, str) and _NAME_RE.fullmatch(name)
            and isinstance(version, str) and _VERSION_RE.fullmatch(version)):
        return UNREADABLE
    return name, version


def client_label(name: str, version: str, framework_version: str | None) -> str:
    """How reviewers and owners see the client: `asibench-portal-cli 0.1.0`, or, for results that name
    none, `asibench 0.2.0 (official client)` from the bundle's framework_version."""
    if name:
        return f"{name} {version}".strip()
    return f"{OFFICIAL_NAME} {framework_version or '?'} (official client)"
