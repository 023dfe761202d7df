"""Paging parameters (`limit`, `offset`, the Hub's `cursor`) of every paginated endpoint, read and
clamped here and nowhere else.

A value is ASCII digits only: "²", "①" and "٣" pass `str.isdigit()` and two of them `int()`, and a
few thousand digits make `int()` raise (or PostgreSQL's bigint OFFSET overflow), which answered 500.
Malformed values are refused with the parameter's name; numbers too large to mean anything are
clamped: an offset past MAX_OFFSET is MAX_OFFSET (an empty page), a limit past the endpoint's
maximum is that maximum.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from portal.errors import ValidationFailed

# Far past any list the Portal serves, and within PostgreSQL's bigint for OFFSET.
MAX_OFFSET = 1_000_000_000
_DIGITS = re.compile(r"[0-9]+", re.ASCII)
# More digits than this is past every clamp below without converting them (int() refuses 4,300).
_MAX_DIGITS = 18


def whole_number(raw: str, name: str, *, ceiling: int) -> int:
    """`raw` as a non-negative integer, at most `ceiling`; ValidationFailed (code bad_page) if it is
    not a plain run of ASCII digits."""
    if not _DIGITS.fullmatch(raw):
        shown = raw if len(raw) <= 40 else raw[:40] + "…"
        raise ValidationFailed(f"{name} must be a whole number written with the digits 0-9, got {shown!r}.",
                               code="bad_page")
    if len(raw.lstrip("0")) > _MAX_DIGITS:
        return ceiling
    return min(int(raw), ceiling)


def page_bounds(params: Mapping[str, str], *, default_limit: int, max_limit: int) -> tuple[int, int]:
    """(limit, offset) of a request's query: limit 1..max_limit (larger is clamped), offset 0..MAX_OFFSET."""
    limit = whole_number(params.get("limit", str(default_limit)), "limit", ceiling=max_limit)
    offset = whole_number(params.get("offset", "0"), "offset", ceiling=MAX_OFFSET)
    if limit < 1:
        raise ValidationFailed(f"limit must be 1-{max_limit}, got 0.", code="bad_page")
    return limit, offset
