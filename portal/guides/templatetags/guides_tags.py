from typing import Any

from django import template

from portal.guides.faq import help_path, message_help_path

register = template.Library()


@register.filter
def faq_path(code: str | None) -> str:
    """The FAQ entry of a refusal code, or "" when it has none."""
    return help_path(code) or ""


@register.filter
def message_faq_path(message: Any) -> str:
    return message_help_path(getattr(message, "extra_tags", "")) or ""
