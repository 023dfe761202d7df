from django import template

from contracts.agent_label import shown_label

register = template.Library()


@register.filter
def agent_label(stored: str | None) -> str:
    """A run's stored agent, fit to show (older runs stored the whole `--agent-cmd` command)."""
    return shown_label(stored or "")
