"""Showing untrusted proposal files to reviewers: safe Markdown, Pygments, revision diffs.

Authors' Markdown may not carry raw HTML or script links into a maintainer's session: raw
HTML is shown as text and only http(s), mailto and relative links survive.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from portal.markdown import render_markdown
from proposals.files import blob_read

MAX_SHOWN_BYTES = 512 * 1024
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
    kind: str  # markdown | code | binary
    html: SafeString


def shown_files(rows: list[Any]) -> list[ShownFile]:
    """Every file of a revision, rendered: Markdown prompts as HTML, code highlighted."""
    out = []
    for row in rows:
        text = _text(blob_read(row.blob))
        if text is None:
            note = f"<p class='muted'>Binary or large file ({row.size} bytes), not shown.</p>"
            out.append(ShownFile(row.path, row.size, row.sha256, "binary", mark_safe(note)))  # noqa: S308
        elif row.path.endswith(".md"):
            out.append(ShownFile(row.path, row.size, row.sha256, "markdown", render_markdown(text)))
        else:
            out.append(ShownFile(row.path, row.size, row.sha256, "code", highlight_code(row.path, text)))
    return out


@dataclass
class FileChange:
    path: str
    change: str  # added | removed | changed
    html: SafeString


def revision_diff(previous: list[Any], current: list[Any]) -> list[FileChange]:
    """What changed from the previous revision, file by file, as highlighted unified diffs."""
    before = {r.path: r for r in previous}
    after = {r.path: r for r in current}
    changes = []
    for path in sorted(before.keys() | after.keys()):
        old, new = before.get(path), after.get(path)
        if old is not None and new is not None and old.sha256 == new.sha256:
            continue
        change = "added" if old is None else "removed" if new is None else "changed"
        old_text = "" if old is None else _text(blob_read(old.blob))
        new_text = "" if new is None else _text(blob_read(new.blob))
        if old_text is None or new_text is None:
            html = mark_safe(f"<p class='muted'>Binary or large file: {escape(change)}.</p>")
        else:
            lines = difflib.unified_diff(old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                                         fromfile=f"a/{path}", tofile=f"b/{path}")
            html = mark_safe(highlight("".join(lines), DiffLexer(stripnl=False), FORMATTER))  # noqa: S308
        changes.append(FileChange(path, change, html))
    return changes
