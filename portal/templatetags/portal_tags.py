"""Filters every app's templates share: plain-text messages with `code` spans, and domain names."""

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
