"""Read a JSON document too big to hold whole because of a few long texts, in bounded memory.

A result.json is large when the agent's log (`agent_output.log`) is: the official client records an
agent's whole stdout there. `LongTextTrimmer` is fed the raw bytes chunk by chunk and writes out the
same document with every string longer than `long_text_bytes` replaced by its last `tail_bytes`
(started on a character and escape boundary), so the result parses with `json.loads` and still
holds everything short: identity, status, timings, hashes. Everything but those cut texts counts
against `structure_cap`. Pure Python, no Django; the scanning is done by `re` and `bytes.find`:
one match per string, never a Python loop per byte.

It assumes UTF-8 and does not validate: what it writes out is parsed afterwards, and a document
that was not JSON stays not JSON.
"""

from __future__ import annotations

import json
import re

_LONGEST_ESCAPE = 6  # \uXXXX
_CONTEXT = 64  # bytes kept before a cut text's tail, to find a boundary to start it on
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))
_SHORT_UNITS = 4096


class StructureTooLarge(ValueError):
    """The document outside its long texts is larger than the cap."""


def _string_end(data: bytes, start: int, stop: int) -> tuple[int, bool]:
    """Where the string whose content runs from `start` (not escaped) closes before `stop`, or -1;
    and whether `data[start:stop]` ends on an escaping backslash. Escaped backslashes, then escaped
    quotes, are blanked out first (left to right, as JSON pairs them), so the first quote left is the
    closing one: three C-level passes instead of a regex that crawls through every escape."""
    window = data[start:stop].replace(b"\\\\", b"__")
    pending = window.endswith(b"\\")
    quote = window.replace(b'\\"', b"__").find(b'"')
    return (start + quote if quote >= 0 else -1), pending


class LongTextTrimmer:
    def __init__(self, *, structure_cap: int, long_text_bytes: int, tail_bytes: int) -> None:
        if long_text_bytes <= tail_bytes:
            raise ValueError("long_text_bytes must exceed tail_bytes")
        self.structure_cap, self.long_text_bytes, self.tail_bytes = structure_cap, long_text_bytes, tail_bytes
        self.out = bytearray()
        self.cuts: dict[str, int] = {}
        self._in_string = False
        self._escape_pending = False  # the previous chunk ended on a backslash inside a string
        self._text = bytearray()
        self._text_bytes = 0
        self._text_chars = 0
        # Structure and every complete string of at most `units` characters or escapes, in one
        # C-level match (possessive inside, so a longer string stops it at once): the common case.
        # The outer repeat stays greedy: before 3.11.5 (Debian 12 has 3.11.2) a possessive repeat around
        # possessive ones ended the match inside the string that failed (CPython gh-100061, gh-106052).
        units = min(_SHORT_UNITS, long_text_bytes // 2)
        self._short_run = re.compile(rb'(?:[^"]*+"(?:[^"\\]|\\.){0,%d}+")*' % units, re.S)

    def feed(self, chunk: memoryview | bytes) -> None:
        data = bytes(chunk)
        pos, end = 0, len(data)
        while pos < end:
            pos = self._string_part(data, pos) if self._in_string else self._outside(data, pos)

    def finish(self) -> tuple[bytes, dict[str, int]]:
        """The trimmed document and, per cut text (by the end that was kept), about how many characters
        it had: its JSON text's, so escapes count as written, never fewer than the text had."""
        if self._in_string:  # unterminated: hand on what there is, the parser refuses it
            self.out += b'"' + bytes(self._text)
        return bytes(self.out), self.cuts

    def _emit(self, data: bytes) -> None:
        self.out += data
        if len(self.out) > self.structure_cap:
            raise StructureTooLarge(f"more than {self.structure_cap} bytes outside its long texts")

    def _outside(self, data: bytes, pos: int) -> int:
        """Pass structure and short strings on from `pos`, copied in one piece; stop at a string that is
        long or left open at the chunk's end, and return where its content starts."""
        emit_from, end = pos, len(data)
        while True:
            pos = self._short_run.match(data, pos).end()  # type: ignore[union-attr]  # matches, maybe empty
            quote = data.find(b'"', pos)
            if quote < 0:
                break
            body = quote + 1
            close = self._medium_string_end(data, body)
            if close >= 0:
                pos = close + 1
                continue
            self._emit(data[emit_from:quote])
            self._in_string = True
            self._text.clear()
            self._text_bytes = self._text_chars = 0
            return body
        self._emit(data[emit_from:])
        return end

    def _medium_string_end(self, data: bytes, body: int) -> int:
        """The closing quote of a string too long for the short run but within `long_text_bytes`, or -1;
        looked for in doubling windows, so a string costs about its own length."""
        limit = min(len(data), body + self.long_text_bytes + 1)
        size = 16 * 1024
        while True:
            stop = min(limit, body + size)
            close, _ = _string_end(data, body, stop)
            if close >= 0 or stop == limit:
                return close
            size *= 2

    def _string_part(self, data: bytes, pos: int) -> int:
        """Take string content from `pos`; return where scanning goes on (after the closing quote)."""
        floor = pos + 1 if self._escape_pending else pos  # that first byte is escaped, whatever it is
        close, self._escape_pending = _string_end(data, floor, len(data))
        if close < 0:
            self._take(data[pos:])
            return len(data)
        self._escape_pending = False
        self._take(data[pos:close])
        self._close_string()
        return close + 1

    def _take(self, piece: bytes) -> None:
        self._text += piece
        self._text_bytes += len(piece)
        self._text_chars += len(piece.translate(None, _CONTINUATION_BYTES))
        if self._text_bytes > self.long_text_bytes and len(self._text) > 2 * (self.tail_bytes + _CONTEXT):
            del self._text[:len(self._text) - (self.tail_bytes + _CONTEXT)]

    def _close_string(self) -> None:
        self._in_string = False
        if self._text_bytes <= self.long_text_bytes:
            self._emit(b'"' + bytes(self._text) + b'"')
            return
        text = _tail_on_boundary(bytes(self._text), self.tail_bytes)
        self._emit(b'"' + text + b'"')
        self.cuts[_json_string(text)] = self._text_chars


def _json_string(text: bytes) -> str:
    value = json.loads(b'"' + text + b'"')
    assert isinstance(value, str)
    return value


def _tail_on_boundary(text: bytes, tail: int) -> bytes:
    """The last `tail` bytes or a little fewer, starting where a character and an escape start: a
    position no backslash precedes within an escape's length, that does not continue a UTF-8 sequence."""
    start = max(0, len(text) - tail)
    for p in range(start, min(len(text), start + 4096)):
        if p >= _LONGEST_ESCAPE and b"\\" not in text[p - _LONGEST_ESCAPE:p] and not 0x80 <= text[p] < 0xC0:
            if _reads_as_json(text[p:]):
                return text[p:]
            break
    # All escapes (a log of blank lines, a run of backslashes): the first offset that reads as JSON.
    for p in range(start, min(len(text), start + 2 * _LONGEST_ESCAPE)):
        if _reads_as_json(text[p:]):
            return text[p:]
    return b""


def _reads_as_json(text: bytes) -> bool:
    try:
        _json_string(text)
    except ValueError:
        return False
    return True
