"""Showing untrusted proposal files to reviewers: safe Markdown and Pygments (revision diffs are
proposals.diffs).

Authors' Markdown may not carry raw HTML or script links into a maintainer's session: raw
HTML is shown as text and only http(s), mailto and relative links survive. A revision may hold
100 MiB of files and highlighting costs seconds per 512 KiB, so a page renders at most
PROPOSAL_PAGE_SHOWN_BYTES of them (prompts and task files first) and lists the rest with their size
for download; a file larger than MAX_SHOWN_BYTES is never read here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from django.conf import settings
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from portal.markdown import render_markdown
from proposals.files import blob_read

MAX_SHOWN_BYTES = 512 * 1024
# Rendered first while the page's budget lasts: what a reviewer reads before any data file.
_FIRST = (".md", ".py", ".yaml", ".yml")
FORMATTER = HtmlFormatter(cssclass="highlight", wrapcode=True)


def highlight_code(path: str, text: str) -> SafeString:
    try:
        lexer = get_lexer_for_filename(path, stripnl=False)
    except ClassNotFound:
        lexer = TextLexer(stripnl=False)
    return mark_safe(highlight(text, lexer, FORMATTER))  # noqa: S308 — Pygments escapes its input


def pygments_css() -> SafeString:
    return mark_safe(FORMATTER.get_style_defs(".highlight"))  # noqa: S308 — static CSS


def _text(data: bytes) -> str | None:
    if len(data) > MAX_SHOWN_BYTES or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@dataclass
class ShownFile:
    path: str
    size: int
    sha256: str
    kind: str  # markdown | code | binary | not_shown
    html: SafeString | str


def _render_first(row: Any) -> tuple[int, str]:
    return (0 if PurePosixPath(row.path).suffix in _FIRST else 1, row.path)


def shown_files(rows: list[Any]) -> list[ShownFile]:
    """Every file of a revision, in path order: Markdown prompts as HTML and code highlighted while the
    page's budget lasts; the others (binary, larger than MAX_SHOWN_BYTES, past the budget) by size only."""
    budget = settings.PROPOSAL_PAGE_SHOWN_BYTES
    rendered: dict[str, ShownFile] = {}
    for row in sorted(rows, key=_render_first):
        if row.size > MAX_SHOWN_BYTES or row.size > budget:
            continue
        text = _text(blob_read(row.blob))
        if text is None:
            rendered[row.path] = ShownFile(row.path, row.size, row.sha256, "binary", "")
            continue
        budget -= row.size
        html = render_markdown(text) if row.path.endswith(".md") else highlight_code(row.path, text)
        rendered[row.path] = ShownFile(row.path, row.size, row.sha256,
                                       "markdown" if row.path.endswith(".md") else "code", html)
    return [rendered.get(row.path) or ShownFile(row.path, row.size, row.sha256, "not_shown", "")
            for row in sorted(rows, key=lambda r: r.path)]
