"""The board's SVG charts: drawn at their own size with legible text, names told apart and never cut to
a shared prefix, heatmap column labels inside the figure. (tests/e2e/test_page_layout.py measures the
same charts as Chromium draws them.)"""

import math
import xml.etree.ElementTree as ET

from leaderboard import charts

SVG = "{http://www.w3.org/2000/svg}"
PREFIX = "claude_code_cli · anthropic/claude-opus-4-1-20250805-extended-thinking-budget-"
ROWS = [{"display_name": f"{PREFIX}{budget} · high effort · Alice's lab", "b1": 60.0 - k, "b2": 40.0, "b3": 30.0 - k,
         "b4": 25.0, "intervals": {"b3": [20.0 - k, 35.0 - k]}} for k, budget in enumerate((32768, 16384, 8192, 4096))]
TASKS = ["electrical_engineering.ac_power_flow_qlimits", "computer_science.cache_miss_classification", "math.x"]


def parsed(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def texts(root: ET.Element, css: str | None = None) -> list[ET.Element]:
    return [t for t in root.iter(f"{SVG}text") if css is None or t.get("class") == css]


def content(text: ET.Element) -> str:
    return "".join(text.itertext())



def test_every_chart_is_drawn_at_its_own_size_with_text_of_at_least_12_px():
    for svg in (charts.b3_bars(ROWS), charts.level_profile(ROWS, {"b1": 50.0, "b2": 40.0, "b3": 30.0, "b4": 20.0}),
                charts.heatmap([{**r, "values": [10.0, None, 90.0]} for r in ROWS], TASKS, title="Mean per task")):
        root = parsed(svg)
        assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"  # one unit, one CSS pixel
        sizes = [float(t.get("font-size")) for t in texts(root)]
        assert sizes and min(sizes) >= 12


def test_names_sharing_a_long_prefix_stay_whole_numbered_and_distinct():
    bars = [list(t.itertext()) for t in texts(parsed(charts.b3_bars(ROWS)), "label")]
    for k, (row, lines) in enumerate(zip(ROWS, bars, strict=True), 1):
        assert len(lines) > 1 and joined(lines) == f"{k}. {row['display_name']}"  # wrapped, nothing cut
    legend = [joined(list(t.itertext())) for t in texts(parsed(charts.level_profile(ROWS)), "label")]
    assert legend == [f"{k}. {row['display_name']}" for k, row in enumerate(ROWS, 1)]


def joined(lines: list[str]) -> str:
    """Wrapped lines read as one text again: a line that ends inside a word goes on without a space."""
    out = lines[0]
    for line in lines[1:]:
        out += line if out.endswith(("-", "/", "_", ".")) else " " + line
    return out


def test_wrapped_lines_fit_the_width_and_break_between_words_or_after_separators():
    name = f"1. {PREFIX}32768 · high effort"
    lines = charts.wrap(name, 300)
    assert len(lines) == 3 and all(charts.text_width(line) <= 300 for line in lines)
    assert joined(lines) == name
    capitals = "THE SAME MODEL WITH EVERY LETTER IN CAPITALS AND THEN SOME MORE OF THEM " * 3
    assert all(charts.text_width(line) <= 200 for line in charts.wrap(capitals, 200, max_lines=20))
    cut = charts.wrap(capitals, 200, max_lines=2)
    assert len(cut) == 2 and cut[-1].endswith("…") and charts.text_width(cut[-1]) <= 200
    assert charts.wrap("x" * 80, 100, max_lines=9)[0] == "x" * int(100 // charts.text_width("x"))


def test_heatmap_column_labels_are_whole_task_ids_inside_the_figure():
    root = parsed(charts.heatmap([{"display_name": r["display_name"], "values": [1.0, 2.0, 3.0]} for r in ROWS],
                                 TASKS, title="Mean of B1–B4 per task, seed42"))
    width, height = float(root.get("width")), float(root.get("height"))
    columns = [t for t in texts(root, "tick") if t.get("transform")]
    assert [content(t) for t in columns] == TASKS
    for label in columns:  # slanted up and right by 60°, from its anchor
        x, y, length = float(label.get("x")), float(label.get("y")), charts.text_width(content(label), 12)
        assert x + length * math.cos(math.radians(60)) <= width
        assert y - length * math.sin(math.radians(60)) - 12 >= 0 and y <= height
    rows = [content(t) for t in texts(root, "label")]
    assert len(set(rows)) == len(rows) and all(r.startswith(f"{k}. ") for k, r in enumerate(rows, 1))


def test_names_are_escaped_in_every_chart():
    hostile = [{"display_name": "<script>alert(1)</script>", "b3": 10.0, "b1": 1.0, "b2": 1.0, "b4": 1.0,
                "values": [1.0]}]
    for svg in (charts.b3_bars(hostile), charts.level_profile(hostile), charts.heatmap(hostile, ["a.b"], title="t")):
        assert "<script>" not in svg and "&lt;script&gt;" in svg
