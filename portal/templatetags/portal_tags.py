"""Filters every app's templates share: plain-text messages with `code` spans, domain names, dollars and tokens."""

import math
import re

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_CODE_SPAN = re.compile(r"`([^`\n]+)`")


@register.filter
def inline_code(text: object) -> SafeString:
    """A plain-text message (a refusal, a flash message) with its `backtick` spans shown as code.

    Messages are written once for the API, the CLI and the pages; on a page the backticks would
    otherwise show literally. Everything is escaped first, so a message can carry no markup.
    """
    return mark_safe(_CODE_SPAN.sub(r"<code>\1</code>", conditional_escape(str(text))))  # noqa: S308 — escaped above


@register.filter
def domain_label(domain: object) -> str:
    """A catalog domain as a heading: `computer_science` → `Computer science`."""
    words = str(domain).replace("_", " ").strip()
    return words[:1].upper() + words[1:]


@register.filter
def usd(value: float | None) -> str:
    """Dollars with the digits a small amount needs ($0.0042, $1.25, $130); "unknown" for no figure, never $0."""
    if value is None:
        return "unknown"
    amount = float(value)
    if amount >= 100:
        return f"${amount:,.0f}"
    if amount >= 1:
        return f"${amount:,.2f}"
    if amount <= 0:
        return "$0"
    digits = max(2, 1 - math.floor(math.log10(amount)))
    return f"${amount:.{digits}f}"


@register.filter
def token_count(value: float | None) -> str:
    """950, 12.3k, 1.2M; "unknown" for no figure, never 0."""
    if value is None:
        return "unknown"
    number = float(value)
    if number >= 1e6:
        return f"{number / 1e6:.1f}M"
    if number >= 1e3:
        return f"{number / 1e3:.1f}k"
    return f"{number:.0f}"


@register.filter
def figure_value(value: float | None, name: str) -> str:
    """One usage figure (portal.submissions.usage.FIGURES) as pages print it; "unknown" for no figure."""
    if value is None:
        return "unknown"
    if name == "cost_usd":
        return usd(value)
    if name == "wall_seconds":
        return f"{float(value):,.1f} s"
    if name in ("input_tokens", "output_tokens"):
        return token_count(value)
    number = float(value)
    return f"{number:,.0f}" if number.is_integer() else f"{number:,.1f}"
