"""Server-side SVG charts (no JavaScript): B3 across configurations, the B1→B4 profile, the heatmap.

Pure: rows in, SVG text out. Every label goes through `escape`; the charts are inlined in pages.
Whiskers are the bootstrap intervals carried by each row.

Each SVG is drawn at its own size (one user unit is one CSS pixel; a page scrolls a chart wider
than its column inside the chart's box), so the font sizes below are the sizes readers get. The
server has no browser to measure text: layouts reserve room for it from the glyph widths of the
widest usual sans-serif face (`text_width`). Names are never cut to something another entry could
also read as: every entry carries its number, and names wrap onto more lines before anything is
left out.
"""

import math
import re
from collections.abc import Sequence
from html import escape
from typing import Any

from contracts import PROMPT_LEVELS

PALETTE = ("#2458d6", "#d92d20", "#079455", "#dc6803", "#7a5af8", "#0e9384", "#c11574", "#475467")
TEXT_PX = 13  # names, legends
TICK_PX = 12  # axis ticks, values, heatmap cells
TITLE_PX = 14
LINE_PX = 16  # one line of TEXT_PX text
BOARD_CHART_WIDTH = 460  # two board charts side by side fit a 1280 px window
MAX_NAME_LINES = 3


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def _name(row: dict[str, Any]) -> str:
    return " ".join(str(row.get("display_name") or row.get("agent") or "?").split())


def _glyph_widths() -> dict[str, float]:
    """Advance widths in ems of DejaVu Sans (1/2048 units), the widest of the usual sans-serif faces
    and the one browsers fall back to on Linux: text measured with it fits in any of them."""
    groups = {
        569: "ijlIJ", 651: " ,.·", 690: ":;/|\\", 721: "f", 739: "-", 799: "()[]'", 803: "t", 842: "r",
        1024: "_*`\"", 1067: "s", 1075: "z", 1087: "?", 1126: "c", 1141: "L", 1178: "F", 1186: "k",
        1212: "vxy", 1235: "P", 1251: "TY", 1253: "o", 1255: "a", 1260: "e", 1294: "E", 1298: "hnu",
        1300: "bdgpqS", 1303: "0123456789${}#", 1343: "K", 1401: "AV", 1403: "XZ", 1405: "B", 1423: "R",
        1430: "C", 1499: "U", 1532: "N", 1540: "H", 1577: "D", 1587: "G", 1612: "OQ", 1675: "w",
        1716: "+<=>^~", 1767: "M", 1946: "%", 1995: "m", 2025: "W", 2048: "@—…",
    }
    return {char: units / 2048 for units, chars in groups.items() for char in chars}


_GLYPH_EM = _glyph_widths()
_OTHER_GLYPH_EM = 1.0  # anything else (accents aside, other scripts run wide)


def text_width(text: str, px: float = TEXT_PX, *, bold: bool = False) -> float:
    """The width `text` takes at `px`, in the widest common sans-serif (its bold face up to a quarter wider)."""
    ems = sum(_GLYPH_EM.get(char, _GLYPH_EM.get(char.lower(), _OTHER_GLYPH_EM)) for char in text)
    return ems * px * (1.25 if bold else 1.0)


_BREAK_AFTER = re.compile(r"[^-/_.]+[-/_.]*|[-/_.]+")  # in a long word, a line may end after - / _ or .


def wrap(text: str, width: float, px: float = TEXT_PX, max_lines: int = MAX_NAME_LINES, *,
         bold: bool = False) -> list[str]:
    """`text` in lines that fit `width` at `px`: broken between words, then after a - / _ or . inside a
    word (model snapshot names are long), then anywhere; past `max_lines` the last line ends in "…"."""

    def fits(line: str) -> bool:
        return text_width(line, px, bold=bold) <= width

    pieces = [(" " if k == 0 else "", part) for word in text.split()
              for k, part in enumerate(_BREAK_AFTER.findall(word))]
    lines: list[str] = []
    current = ""
    for separator, piece in pieces:
        candidate = f"{current}{separator}{piece}" if current else piece
        if fits(candidate):
            current = candidate
            continue
        if current:
            lines.append(current)
            current = ""
        for char in piece:  # a piece wider than a whole line
            if current and not fits(current + char):
                lines.append(current)
                current = ""
            current += char
    lines = [*lines, current] if current or not lines else lines
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        last = lines[-1]
        while last and not fits(last + "…"):
            last = last[:-1]
        lines[-1] = last.rstrip() + "…"
    return lines


def _text_lines(x: float, y: float, lines: list[str], *, css: str = "label", px: int = TEXT_PX,
                anchor: str = "start") -> str:
    """One <text> of several lines (so a name stays one label), first baseline at `y`."""
    spans = "".join(f'<tspan x="{x:.1f}" dy="{0 if k == 0 else LINE_PX}">{escape(line)}</tspan>'
                    for k, line in enumerate(lines))
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{px}" text-anchor="{anchor}" class="{css}">{spans}</text>'


def _tick(x: float, y: float, text: str, anchor: str = "middle", css: str = "tick") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{TICK_PX}" text-anchor="{anchor}" class="{css}">'
            f'{escape(text)}</text>')


def _title(x: float, text: str, width: float) -> tuple[str, float]:
    """The chart's title, wrapped to `width`, and the height it takes."""
    lines = wrap(text, width - x, TITLE_PX, max_lines=4, bold=True)
    return _text_lines(x, 20, lines, css="chart-title", px=TITLE_PX), 20 + (len(lines) - 1) * LINE_PX


def b3_bars(rows: Sequence[dict[str, Any]], *, title: str = "B3 across agents") -> str:
    """Horizontal bars of B3 with 95% bootstrap whiskers, highest first; each bar's numbered name above it."""
    width, left, right, bar_h = BOARD_CHART_WIDTH, 8, 44, 14
    plot_w = width - left - right
    heading, heading_h = _title(left, f"{title} (95% CI over tasks)", width)
    top = heading_h + 20
    names = [wrap(f"{k}. {_name(row)}", width - left) for k, row in enumerate(rows, 1)]
    heights = [len(lines) * LINE_PX + bar_h + 10 for lines in names]
    axis_y = top + sum(heights) if rows else top + 30
    height = axis_y + 26

    def x(v: float) -> float:
        return left + plot_w * max(0.0, min(v, 100.0)) / 100.0

    parts = [_open(width, height, title), heading]
    for tick in range(0, 101, 20):
        parts.append(f'<line x1="{x(tick):.1f}" y1="{top - 6}" x2="{x(tick):.1f}" y2="{axis_y}" class="grid"/>'
                     + _tick(x(tick), axis_y + 18, str(tick)))
    if not rows:
        parts.append(_tick(left, top + 16, "No published runs.", anchor="start"))
    y = top
    for row, lines, row_h in zip(rows, names, heights, strict=True):
        value = row.get("b3") or 0.0
        bar_y = y + len(lines) * LINE_PX
        parts.append(f'<g class="bar"><title>{escape(_name(row))}: B3 {_fmt(row.get("b3"))}{_ci_text(row, "b3")}'
                     f'</title>{_text_lines(left, y + TEXT_PX, lines)}'
                     f'<rect x="{left}" y="{bar_y}" width="{x(value) - left:.1f}" height="{bar_h}" '
                     f'fill="{PALETTE[0]}" opacity="0.8"/>')
        bounds = (row.get("intervals") or {}).get("b3")
        if bounds:
            lo, hi, mid = x(bounds[0]), x(bounds[1]), bar_y + bar_h / 2
            parts.append(f'<line x1="{lo:.1f}" y1="{mid:.1f}" x2="{hi:.1f}" y2="{mid:.1f}" class="whisker"/>'
                         f'<line x1="{lo:.1f}" y1="{mid - 5:.1f}" x2="{lo:.1f}" y2="{mid + 5:.1f}" class="whisker"/>'
                         f'<line x1="{hi:.1f}" y1="{mid - 5:.1f}" x2="{hi:.1f}" y2="{mid + 5:.1f}" class="whisker"/>')
        end = x(max(value, (bounds or [0, 0])[1])) + 5
        parts.append(_tick(min(end, width - 2), bar_y + bar_h - 2, _fmt(row.get("b3")),
                           anchor="start" if end <= width - right + 4 else "end", css="value") + "</g>")
        y += row_h
    parts.append("</svg>")
    return "".join(parts)


def level_profile(rows: Sequence[dict[str, Any]], average: dict[str, float | None] | None = None,
                  *, title: str = "Scores from B1 to B4") -> str:
    """One line per configuration across B1..B4, with whiskers; the all-configurations mean dashed.

    The legend is below the plot, one numbered entry per line (wrapped, never cut to a prefix).
    """
    width, left, right, plot_h = BOARD_CHART_WIDTH, 40, 16, 240
    plot_w = width - left - right
    heading, heading_h = _title(8, f"{title} (95% CI over tasks)", width)
    top = heading_h + 20
    legend_x = 40  # where a legend entry's text starts, after its line sample

    def x(i: int) -> float:
        return left + plot_w * i / (len(PROMPT_LEVELS) - 1)

    def y(v: float) -> float:
        return top + plot_h * (1 - max(0.0, min(v, 100.0)) / 100.0)

    series = [(row, PALETTE[k % len(PALETTE)], f"{k + 1}. {_name(row)}") for k, row in enumerate(rows)]
    if average and any(v is not None for v in average.values()):
        series.append(({"levels_only": True, **average}, "#98a2b3", "All published runs shown (mean)"))
    legends = [wrap(label, width - legend_x - 4) for _, _, label in series]
    legend_top = top + plot_h + 44
    height = legend_top + sum(len(lines) * LINE_PX + 6 for lines in legends) + 8

    parts = [_open(width, height, title), heading]
    for tick in range(0, 101, 20):
        parts.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{left + plot_w}" y2="{y(tick):.1f}" class="grid"/>'
                     + _tick(left - 6, y(tick) + 4, str(tick), anchor="end"))
    for i, level in enumerate(PROMPT_LEVELS):
        parts.append(_tick(x(i), top + plot_h + 20, level.upper()))
    legend_y = legend_top
    for k, ((row, color, label), lines) in enumerate(zip(series, legends, strict=True)):
        points = [(x(i), y(row[lv])) for i, lv in enumerate(PROMPT_LEVELS) if row.get(lv) is not None]
        dash = ' stroke-dasharray="6 4"' if row.get("levels_only") else ""
        values = ", ".join(f"{lv.upper()} {_fmt(row.get(lv))}" for lv in PROMPT_LEVELS)
        parts.append(f'<g class="series"><title>{escape(label)}: {values}</title>')
        if points:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        for i, lv in enumerate(PROMPT_LEVELS):
            if row.get(lv) is None:
                continue
            bounds = None if row.get("levels_only") else (row.get("intervals") or {}).get(lv)
            offset = (k - len(series) / 2) * 2.0  # spread whiskers so overlapping ones stay visible
            if bounds:
                parts.append(f'<line x1="{x(i) + offset:.1f}" y1="{y(bounds[0]):.1f}" x2="{x(i) + offset:.1f}" '
                             f'y2="{y(bounds[1]):.1f}" stroke="{color}" stroke-width="1.2" opacity="0.7"/>')
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(row[lv]):.1f}" r="3.5" fill="{color}"/>')
        mid = legend_y + TEXT_PX - 4
        parts.append(f'<line x1="8" y1="{mid}" x2="{legend_x - 6}" y2="{mid}" stroke="{color}" stroke-width="3"{dash}/>'
                     f'{_text_lines(legend_x, legend_y + TEXT_PX, lines)}</g>')
        legend_y += len(lines) * LINE_PX + 6
    if not rows:
        parts.append(_tick(left + 10, top + 20, "No published runs.", anchor="start"))
    parts.append("</svg>")
    return "".join(parts)


def _ci_text(row: dict[str, Any], column: str) -> str:
    bounds = (row.get("intervals") or {}).get(column)
    return f" (95% CI {bounds[0]:.1f}–{bounds[1]:.1f})" if bounds else ""


def _open(width: float, height: float, title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" '
            f'height="{height:.0f}" role="img" aria-label="{escape(title)}" class="chart">')


_COLD, _HOT = (247, 251, 255), (8, 48, 107)  # a sequential blue scale: 0 → pale, 100 → dark
_MISSING = "#e4e7ec"
HEATMAP_LABEL_WIDTH = 300  # room for a row's name beside the grid; the table below the figure has them whole
_SIN60, _COS60 = 0.866, 0.5


def _shade(value: float) -> str:
    t = max(0.0, min(value, 100.0)) / 100.0
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(_COLD, _HOT, strict=True))


def _row_label(number: int, name: str) -> str:
    """A heatmap row's label: its number (the key to the table below the figure) and its name, cut short."""
    return wrap(f"{number}. {name}", HEATMAP_LABEL_WIDTH - 16, max_lines=1)[0]


def heatmap(rows: Sequence[dict[str, Any]], tasks: Sequence[str], *, title: str) -> str:
    """Configurations (rows, each with `display_name` and `values` aligned with `tasks`) × tasks.

    Each cell carries its figure in a <title>; the page puts the same figures in a table beside it,
    numbered like the rows here. Column labels are whole task ids, slanted; the figure is as tall and
    wide as they need.
    """
    cell_w, cell_h, legend_h = 40, 24, 50
    label_w = HEATMAP_LABEL_WIDTH
    longest = max((text_width(t, TICK_PX) for t in tasks), default=0.0)
    grid_w = cell_w * max(len(tasks), 1)
    # A slanted label runs right of its column by its length times cos 60°.
    width = max(label_w + grid_w + longest * _COS60 + 8, label_w + 420)
    heading, heading_h = _title(0, title, width)
    top = heading_h + 24 + longest * _SIN60
    height = top + cell_h * max(len(rows), 1) + legend_h
    parts = [_open(width, height, title), heading]
    for j, task in enumerate(tasks):
        cx = label_w + j * cell_w + cell_w / 2
        parts.append(f'<text x="{cx:.1f}" y="{top - 8:.1f}" transform="rotate(-60 {cx:.1f} {top - 8:.1f})" '
                     f'font-size="{TICK_PX}" class="tick">{escape(task)}</text>')
    for i, row in enumerate(rows):
        y = top + i * cell_h
        parts.append(_text_lines(label_w - 8, y + 16, [_row_label(i + 1, _name(row))], anchor="end"))
        for j, (task, value) in enumerate(zip(tasks, row["values"], strict=True)):
            x = label_w + j * cell_w
            fill = _MISSING if value is None else _shade(value)
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell_w - 1}" height="{cell_h - 1}" fill="{fill}">'
                         f'<title>{escape(_name(row))} · {escape(task)}: {_fmt(value)}</title></rect>')
            if value is not None:
                ink = "#ffffff" if value >= 55 else "#1d2330"
                parts.append(f'<text x="{x + cell_w / 2:.1f}" y="{y + 16:.1f}" font-size="{TICK_PX}" '
                             f'text-anchor="middle" class="cell" fill="{ink}">{value:.0f}</text>')
    if not rows:
        parts.append(_tick(label_w, top + 16, "No published runs.", anchor="start"))
    ly = height - legend_h + 14
    for k, tick in enumerate(range(0, 101, 10)):
        parts.append(f'<rect x="{label_w + k * 24:.1f}" y="{ly:.1f}" width="24" height="12" fill="{_shade(tick)}"/>')
        if tick % 50 == 0:
            parts.append(_tick(label_w + k * 24 + 12, ly + 28, str(tick)))
    parts.append(f'<rect x="{label_w + 11 * 24 + 16:.1f}" y="{ly:.1f}" width="24" height="12" fill="{_MISSING}"/>'
                 + _tick(label_w + 12 * 24 + 20, ly + 11, "no result", anchor="start") + "</svg>")
    return "".join(parts)


def _usd_tick(value: float) -> str:
    return f"${value:,.0f}" if value >= 1 else f"${value:.{max(0, -math.floor(math.log10(value)))}f}"


def cost_score(points: Sequence[dict[str, Any]], *, value_label: str, title: str) -> str:
    """Each placed run at its $ per task (log scale) and its score, numbered as in the table beside the chart;
    the Pareto front (the runs no other run beats on both: as cheap and as good, better in one) joined as a
    staircase, its points filled, the others hollow. Runs without cost data are never drawn (the page lists them)."""
    width, left, right, plot_h = BOARD_CHART_WIDTH, 40, 24, 260
    plot_w = width - left - right
    heading, heading_h = _title(8, title, width)
    top = heading_h + 20
    costs = [p["cost"] for p in points if p["cost"] > 0]
    low = math.floor(math.log10(min(costs))) if costs else -3
    high = max(math.ceil(math.log10(max(costs))) if costs else 0, low + 1)
    step = max(1, math.ceil((high - low) / 6))  # at most seven decades labelled
    legend_top = top + plot_h + 44
    height = legend_top + 4 * LINE_PX + 2 * 6 + 8  # two legend entries of up to two lines

    def x(cost: float) -> float:
        exponent = math.log10(cost) if cost > 0 else low
        return left + plot_w * (exponent - low) / (high - low)

    # The score axis spans the scores shown (in tens, at least 20 points), so close runs stay apart.
    scores = [p["score"] for p in points]
    bottom = max(0, math.floor((min(scores, default=0.0) - 5) / 10) * 10)
    ceiling = min(100, math.ceil((max(scores, default=100.0) + 5) / 10) * 10)
    bottom, ceiling = (bottom, max(ceiling, bottom + 20)) if bottom + 20 <= 100 else (80, 100)

    def y(score: float) -> float:
        return top + plot_h * (1 - (max(bottom, min(score, ceiling)) - bottom) / (ceiling - bottom))

    parts = [_open(width, height, title), heading]
    for tick in range(bottom, ceiling + 1, 10 if ceiling - bottom <= 50 else 20):
        parts.append(f'<line x1="{left}" y1="{y(tick):.1f}" x2="{left + plot_w}" y2="{y(tick):.1f}" class="grid"/>'
                     + _tick(left - 6, y(tick) + 4, str(tick), anchor="end"))
    for exponent in range(low, high + 1, step):
        gx = left + plot_w * (exponent - low) / (high - low)
        anchor = "start" if exponent == low else "end" if exponent == high else "middle"
        parts.append(f'<line x1="{gx:.1f}" y1="{top}" x2="{gx:.1f}" y2="{top + plot_h}" class="grid"/>'
                     + _tick(gx, top + plot_h + 18, _usd_tick(10.0 ** exponent), anchor=anchor))
    parts.append(_tick(left + plot_w / 2, top + plot_h + 36, "$ per task, log scale"))
    front = sorted((p for p in points if p["front"]), key=lambda p: p["cost"])
    if len(front) > 1:
        stairs = [f"{x(front[0]['cost']):.1f},{y(front[0]['score']):.1f}"]
        for before, after in zip(front, front[1:], strict=False):
            stairs += [f"{x(after['cost']):.1f},{y(before['score']):.1f}",
                       f"{x(after['cost']):.1f},{y(after['score']):.1f}"]
        parts.append(f'<polyline points="{" ".join(stairs)}" fill="none" stroke="{PALETTE[0]}" stroke-width="1.5" '
                     'stroke-dasharray="5 3" class="front"/>')
    for point in points:
        px, py = x(point["cost"]), y(point["score"])
        fill = PALETTE[0] if point["front"] else "#ffffff"
        label_x = px + 7 if px < width - 30 else px - 7
        parts.append(f'<g class="point"><title>{point["number"]}. {escape(" ".join(point["display_name"].split()))}: '
                     f'{value_label} {_fmt(point["score"])}, {escape(_usd_tick_exact(point["cost"]))} per task '
                     f'({escape(point["cost_source"])}){" · on the Pareto front" if point["front"] else ""}</title>'
                     f'<circle cx="{px:.1f}" cy="{py:.1f}" r="5" fill="{fill}" stroke="{PALETTE[0]}" stroke-width="2"/>'
                     + _tick(label_x, py - 6, str(point["number"]), anchor="start" if px < width - 30 else "end",
                             css="value") + "</g>")
    if not points:
        parts.append(_tick(left + 10, top + 20, "No published run has cost data.", anchor="start"))
    legend_y = legend_top + TEXT_PX
    for filled, text in ((True, "On the Pareto front: no run is cheaper and better"),
                         (False, "Beaten: another run is as cheap and as good, better in one")):
        lines = wrap(text, width - 30)
        parts.append(f'<circle cx="14" cy="{legend_y - 4}" r="5" fill="{PALETTE[0] if filled else "#ffffff"}" '
                     f'stroke="{PALETTE[0]}" stroke-width="2"/>' + _text_lines(26, legend_y, lines))
        legend_y += len(lines) * LINE_PX + 6
    parts.append("</svg>")
    return "".join(parts)


def _usd_tick_exact(value: float) -> str:
    if value <= 0:
        return "$0"
    return f"${value:,.2f}" if value >= 1 else f"${value:.{max(2, 1 - math.floor(math.log10(value)))}f}"
