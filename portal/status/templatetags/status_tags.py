from django import template

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """42 s, 3 min 20 s, 2 h 05 min: the scale a waiting time is read at."""
    if seconds is None:
        return "—"
    total = round(seconds)
    if total < 60:
        return f"{total} s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
