"""Server-side SVG charts (no JavaScript): B3 across configurations, and the B1→B4 profile.

Pure: rows in, SVG text out. Every label goes through `escape`; the charts are inlined in pages.
Whiskers are the bootstrap intervals carried by each row.
"""

from collections.abc import Sequence
from html import escape
from typing import Any

from contracts import PROMPT_LEVELS as LEVELS

PALETTE = ("#2458d6", "#d92d20", "#079455", "#dc6803", "#7a5af8", "#0e9384", "#c11574", "#475467")


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _label(row: dict[str, Any], limit: int = 34) -> str:
    name = str(row.get("display_name") or row.get("agent") or "?")
    return name if len(name) <= limit else name[: limit - 1] + "…"


def b3_bars(rows: Sequence[dict[str, Any]], *, title: str = "B3 across agents") -> str:
    """Horizontal bars of B3 with 95% bootstrap whiskers, highest first."""
    width, label_w, row_h, top, bottom = 720, 250, 24, 34, 30
    plot_w = width - label_w - 60
    height = top + bottom + row_h * max(len(rows), 1)

    def x(v: float) -> float:
        return label_w + plot_w * max(0.0, min(v, 100.0)) / 100.0

    parts = [_open(width, height, title),
             f'<text x="{label_w}" y="20" class="chart-title">{escape(title)} (95% CI over tasks)</text>']
    for tick in range(0, 101, 20):
        parts.append(f'<line x1="{x(tick):.1f}" y1="{top - 4}" x2="{x(tick):.1f}" y2="{height - bottom}" '
                     f'class="grid"/><text x="{x(tick):.1f}" y="{height - bottom + 16}" class="tick" '
                     f'text-anchor="middle">{tick}</text>')
    if not rows:
        parts.append(f'<text x="{label_w}" y="{top + 16}" class="tick">No published runs.</text>')
    for i, row in enumerate(rows):
        y = top + i * row_h
        value = row.get("b3") or 0.0
        parts.append(f'<g class="bar"><title>{escape(_label(row, 200))}: B3 {_fmt(row.get("b3"))}'
                     f'{_ci_text(row, "b3")}</title>'
                     f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end" class="label">{escape(_label(row))}'
                     f'</text><rect x="{label_w}" y="{y + 4}" width="{x(value) - label_w:.1f}" height="{row_h - 8}" '
                     f'fill="{PALETTE[0]}" opacity="0.8"/>')
        bounds = (row.get("intervals") or {}).get("b3")
        if bounds:
            lo, hi, mid = x(bounds[0]), x(bounds[1]), y + row_h / 2
            parts.append(f'<line x1="{lo:.1f}" y1="{mid:.1f}" x2="{hi:.1f}" y2="{mid:.1f}" class="whisker"/>'
                         f'<line x1="{lo:.1f}" y1="{mid - 5:.1f}" x2="{lo:.1f}" y2="{mid + 5:.1f}" class="whisker"/>'
                         f'<line x1="{hi:.1f}" y1="{mid - 5:.1f}" x2="{hi:.1f}" y2="{mid + 5:.1f}" class="whisker"/>')
        parts.append(f'<text x="{x(max(value, (bounds or [0, 0])[1])) + 6:.1f}" y="{y + 16}" class="value">'
                     f'{_fmt(row.get("b3"))}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def level_profile(rows: Sequence[dict[str, Any]], average: dict[str, float | None] | None = None,
                  *, title: str = "Scores from B1 to B4") -> str:
    """One line per configuration across B1..B4, with whiskers; the all-configurations mean dashed."""
    width, height, left, right, top, bottom = 720, 340, 48, 230, 34, 36
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(i: int) -> float:
        return left + plot_w * i / (len(LEVELS) - 1)

    def y(v: float) -> float:
        return top + plot_h * (1 - max(0.0, min(v, 100.0)) / 100.0)

    parts = [_open(width, height, title),
             f'<text x="{left}" y="20" class="chart-title">{escape(title)} (95% CI over tasks)</text>']
    for tick in range(0, 101, 20):
        parts.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{left + plot_w}" y2="{y(tick):.1f}" class="grid"/>'
                     f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end" class="tick">{tick}</text>')
    for i, level in enumerate(LEVELS):
        parts.append(f'<text x="{x(i):.1f}" y="{height - bottom + 18}" text-anchor="middle" class="tick">'
                     f'{level.upper()}</text>')
    series = [(row, PALETTE[k % len(PALETTE)], _label(row, 28)) for k, row in enumerate(rows)]
    if average and any(v is not None for v in average.values()):
        series.append(({"levels_only": True, **average}, "#98a2b3", "All published (mean)"))
    for k, (row, color, label) in enumerate(series):
        points = [(x(i), y(row[lv])) for i, lv in enumerate(LEVELS) if row.get(lv) is not None]
        dash = ' stroke-dasharray="6 4"' if row.get("levels_only") else ""
        values = ", ".join(f"{lv.upper()} {_fmt(row.get(lv))}" for lv in LEVELS)
        parts.append(f'<g class="series"><title>{escape(label)}: {values}</title>')
        if points:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        for i, lv in enumerate(LEVELS):
            if row.get(lv) is None:
                continue
            bounds = None if row.get("levels_only") else (row.get("intervals") or {}).get(lv)
            offset = (k - len(series) / 2) * 2.0  # spread whiskers so overlapping ones stay visible
            if bounds:
                parts.append(f'<line x1="{x(i) + offset:.1f}" y1="{y(bounds[0]):.1f}" x2="{x(i) + offset:.1f}" '
                             f'y2="{y(bounds[1]):.1f}" stroke="{color}" stroke-width="1.2" opacity="0.7"/>')
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(row[lv]):.1f}" r="3.5" fill="{color}"/>')
        ly = top + 10 + k * 20
        parts.append(f'<line x1="{width - right + 16}" y1="{ly}" x2="{width - right + 36}" y2="{ly}" '
                     f'stroke="{color}" stroke-width="3"{dash}/><text x="{width - right + 42}" y="{ly + 4}" '
                     f'class="label">{escape(label)}</text></g>')
    if not rows:
        parts.append(f'<text x="{left + 10}" y="{top + 20}" class="tick">No published runs.</text>')
    parts.append("</svg>")
    return "".join(parts)


def _ci_text(row: dict[str, Any], column: str) -> str:
    bounds = (row.get("intervals") or {}).get(column)
    return f" (95% CI {bounds[0]:.1f}–{bounds[1]:.1f})" if bounds else ""


def _open(width: int, height: int, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
            f'role="img" aria-label="{escape(title)}" class="chart">')


_COLD, _HOT = (247, 251, 255), (8, 48, 107)  # a sequential blue scale: 0 → pale, 100 → dark
_MISSING = "#e4e7ec"


def _shade(value: float) -> str:
    t = max(0.0, min(value, 100.0)) / 100.0
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(_COLD, _HOT, strict=True))


def heatmap(rows: Sequence[dict[str, Any]], tasks: Sequence[str], *, title: str) -> str:
    """Configurations (rows, each with `display_name` and `values` aligned with `tasks`) × tasks.

    Each cell carries its figure in a <title>; the page puts the same figures in a table beside it.
    """
    label_w, top, cell_h, legend_h = 230, 150, 22, 46
    cell_w = max(12, min(44, 620 // max(len(tasks), 1)))
    width = max(label_w + cell_w * max(len(tasks), 1) + 20, label_w + 400)  # room for the legend
    height = top + cell_h * max(len(rows), 1) + legend_h
    parts = [_open(width, height, title), f'<text x="0" y="18" class="chart-title">{escape(title)}</text>']
    for j, task in enumerate(tasks):
        cx = label_w + j * cell_w + cell_w / 2
        parts.append(f'<text x="{cx:.1f}" y="{top - 8}" transform="rotate(-60 {cx:.1f} {top - 8})" '
                     f'class="tick">{escape(task if len(task) <= 30 else task[:29] + "…")}</text>')
    for i, row in enumerate(rows):
        y = top + i * cell_h
        name = _label(row)
        parts.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end" class="label">{escape(name)}</text>')
        for j, (task, value) in enumerate(zip(tasks, row["values"], strict=True)):
            x = label_w + j * cell_w
            fill = _MISSING if value is None else _shade(value)
            parts.append(f'<rect x="{x}" y="{y}" width="{cell_w - 1}" height="{cell_h - 1}" fill="{fill}">'
                         f'<title>{escape(_label(row, 200))} · {escape(task)}: {_fmt(value)}</title></rect>')
            if value is not None and cell_w >= 30:
                ink = "#ffffff" if value >= 55 else "#1d2330"
                parts.append(f'<text x="{x + cell_w / 2:.1f}" y="{y + 15}" text-anchor="middle" class="cell" '
                             f'fill="{ink}">{value:.0f}</text>')
    if not rows:
        parts.append(f'<text x="{label_w}" y="{top + 16}" class="tick">No published runs.</text>')
    ly = height - legend_h + 18
    for k, tick in enumerate(range(0, 101, 10)):
        parts.append(f'<rect x="{label_w + k * 24}" y="{ly}" width="24" height="10" fill="{_shade(tick)}"/>')
        if tick % 50 == 0:
            parts.append(f'<text x="{label_w + k * 24 + 12}" y="{ly + 24}" text-anchor="middle" class="tick">'
                         f'{tick}</text>')
    parts.append(f'<rect x="{label_w + 11 * 24 + 16}" y="{ly}" width="24" height="10" fill="{_MISSING}"/>'
                 f'<text x="{label_w + 12 * 24 + 20}" y="{ly + 9}" class="tick">no result</text></svg>')
    return "".join(parts)
