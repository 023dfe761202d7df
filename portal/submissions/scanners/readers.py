"""Steps out of the three shapes a run's record comes in, read in bounded memory.

- The official 0.2.0 client's step list (`<stem>.trajectory.json`, which `asibench run` writes too): a JSON
  array of `{step_index, step_type, content, metadata}`. Read one step at a time (`json_array_items`).
- A Claude-Code-style JSONL trajectory (`_trajectory.jsonl`, the schema the official client reads from the
  workspace; also an agent's raw stdout): one event per line, turned into steps numbered exactly as the
  official extractor numbers them, so a finding cites the step index the official step list gives.
  Unlike that list, a step keeps all of a tool call's arguments (the query of a search, the text written).
- An agent log (`agent_output.log` of a result.json): the official adapters' summary lines (`=== Turn N ===`,
  `[Tool] Bash(command=…)`, `[ToolResult] …`, `[Claude] …`, `[thinking] …`), JSONL events, or plain text;
  a step here is a block starting on a line, and findings cite lines.

Every reader takes a `Meter` and stops, saying why, when a limit is reached: bytes, steps, a line or a
step longer than a line may be (that one is skipped, and the rest is read).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from portal.submissions.scanners.model import ScanLimits, Step


class TextStream(Protocol):
    def readline(self, size: int = -1, /) -> str: ...


class Meter:
    """What a scan consumed so far, against its limits; `cut` says why it stopped early ("" if it did not)."""

    def __init__(self, limits: ScanLimits):
        self.limits = limits
        self.bytes = 0
        self.steps = 0
        self.cut = ""
        self.notes: list[str] = []

    def take(self, size: int) -> bool:
        """Count `size` more bytes read; False (with the reason recorded) once the byte budget is spent."""
        if self.cut:
            return False
        self.bytes += size
        if self.bytes > self.limits.max_bytes:
            self.cut = (f"scanned the first {size_text(self.limits.max_bytes)}; the rest of the record was not read "
                        "(the scanners' limit)")
            return False
        return True

    def step(self) -> bool:
        if self.cut:
            return False
        self.steps += 1
        if self.steps > self.limits.max_steps:
            self.steps -= 1
            self.cut = f"scanned the first {self.limits.max_steps} steps; the rest was not read"
            return False
        return True

    def note(self, text: str) -> None:
        if len(self.notes) < 20:
            self.notes.append(text)


def size_text(size: int) -> str:
    return f"{size >> 20} MB" if size >= 1 << 20 else f"{size >> 10} KB" if size >= 1 << 10 else f"{size} bytes"


def window(text: str, limit: int) -> str:
    """The text a pattern sees of one step: all of it, or its start and end around a marked gap."""
    if len(text) <= limit:
        return text
    head = limit * 3 // 4
    return f"{text[:head]}\n[… {len(text) - limit} characters not scanned …]\n{text[-(limit - head):]}"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _args(raw: Any, limit: int) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, str] = {}
    for key, value in list(raw.items())[:40]:
        if isinstance(value, (dict, list)):
            try:
                value = json.dumps(value, ensure_ascii=False)[:limit]
            except (TypeError, ValueError, RecursionError):
                value = ""
        out[str(key)[:80]] = window(_text(value), limit)
    return out


# --- lines, bounded --------------------------------------------------------------------------------

def stream_lines(stream: TextStream, meter: Meter) -> Iterator[tuple[int, str | None]]:
    """(1-based line number, the line without its end, or None for a line over the limit) of a text stream,
    never holding more than one line of at most `max_line_bytes` characters."""
    limit = meter.limits.max_line_bytes
    number = 0
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit and not line.endswith("\n"):
            skipped = len(line)
            while line and not line.endswith("\n"):  # the rest of the oversized line, piece by piece
                line = stream.readline(1 << 20)
                skipped += len(line)
            meter.note(f"line {number} is {skipped} characters long, more than the {limit} a line may be; "
                       "it was not read")
            yield number, None
            continue
        if not meter.take(len(line)):
            return
        yield number, line.rstrip("\r\n")


def text_lines(text: str, meter: Meter) -> Iterator[tuple[int, str | None]]:
    """`stream_lines` over a string held in memory, without splitting it all at once."""
    limit = meter.limits.max_line_bytes
    start, number = 0, 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        number += 1
        if end - start > limit:
            meter.note(f"line {number} is {end - start} characters long, more than the {limit} a line may be; "
                       "it was not read")
            yield number, None
        else:
            if not meter.take(end - start + 1):
                return
            yield number, text[start:end].rstrip("\r")
        start = end + 1


# --- the official step list --------------------------------------------------------------------------

class MalformedJson(ValueError):
    pass


def json_array_items(stream: Any, meter: Meter, chunk: int = 1 << 16) -> Iterator[Any]:
    """Each item of a JSON array read from a text stream (`read(n)`), one at a time: memory is one item
    (at most `max_line_bytes` characters) plus one chunk. Raises MalformedJson where the text is not one."""
    decoder = json.JSONDecoder()
    buffer, pos, eof = "", 0, False

    def fill(wanted: int) -> None:
        nonlocal buffer, pos, eof
        buffer = buffer[pos:]
        pos = 0
        while not eof and len(buffer) < wanted:
            piece = stream.read(max(chunk, wanted - len(buffer)))
            if not piece:
                eof = True
            buffer += piece

    def skip_space() -> None:
        nonlocal pos
        while True:
            while pos < len(buffer) and buffer[pos] in " \t\r\n":
                pos += 1
            if pos < len(buffer) or eof:
                return
            fill(chunk)

    fill(chunk)
    skip_space()
    if pos >= len(buffer) or buffer[pos] != "[":
        raise MalformedJson("the step list is not a JSON array")
    pos += 1
    first = True
    while True:
        skip_space()
        if pos >= len(buffer):
            raise MalformedJson("the step list ends before its closing bracket")
        if buffer[pos] == "]":
            return
        if not first:
            if buffer[pos] != ",":
                raise MalformedJson(f"expected ',' between steps at character {meter.bytes}")
            pos += 1
            skip_space()
        first = False
        want = chunk
        while True:
            try:
                item, end = decoder.raw_decode(buffer, pos)
                if end < len(buffer) or eof:  # a number at the buffer's end may go on in the next chunk
                    break
            except RecursionError:
                raise MalformedJson("a step nests too deeply") from None
            except ValueError:
                if eof:
                    raise MalformedJson(f"a step is not valid JSON near character {meter.bytes}") from None
            if len(buffer) - pos > meter.limits.max_line_bytes:
                raise MalformedJson(f"a step is longer than {meter.limits.max_line_bytes} characters") from None
            want = min(2 * max(want, len(buffer) - pos), meter.limits.max_line_bytes + chunk)
            fill(want)
        if not meter.take(end - pos):
            return
        pos = end
        yield item


def official_steps(items: Iterable[Any], meter: Meter) -> Iterator[Step]:
    """Steps of the official client's step list (a list already parsed, or `json_array_items`)."""
    limit = meter.limits.step_chars
    counter = -1
    for item in items:
        if not isinstance(item, Mapping):
            continue
        counter += 1
        index = item.get("step_index")
        position = index if type(index) is int and index >= 0 else counter
        kind = _text(item.get("step_type"))
        raw_metadata = item.get("metadata")
        metadata: Mapping[str, Any] = raw_metadata if isinstance(raw_metadata, Mapping) else {}
        tool = _text(metadata.get("tool_name") if kind == "tool_call" else metadata.get("parent_tool_name"))[:80]
        args = _args(metadata.get("key_args"), limit) if kind == "tool_call" else {}
        changes = metadata.get("changes")
        if kind == "tool_call" and isinstance(changes, list):  # codex file_change: the paths it touched
            paths = [_text(c.get("path")) for c in changes[:50] if isinstance(c, Mapping) and c.get("path")]
            if paths:
                args["path"] = "\n".join(paths)
        if not meter.step():
            return
        yield Step(position=position, kind=kind, text=window(_text(item.get("content")), limit), tool=tool,
                   args=args, is_error=bool(metadata.get("is_error")) or (
                       kind == "code_execution" and metadata.get("exit_code") not in (None, 0)))


# --- JSONL (Claude Code stream-json) -------------------------------------------------------------

CLAUDE_EVENT_TYPES = frozenset({"assistant", "user", "system", "error", "rate_limit_event", "rate_limit", "result"})


class JsonlSteps:
    """Turns Claude-Code-style events into steps, numbering them as the official extractor does."""

    def __init__(self, limits: ScanLimits):
        self.limit = limits.step_chars
        self.index = 0
        self.tools: dict[str, str] = {}

    def _step(self, kind: str, text: str, position: int | None = None, **fields: Any) -> Step:
        step = Step(position=self.index if position is None else position, kind=kind, text=window(text, self.limit),
                    **fields)
        self.index += 1
        return step

    def malformed(self, line: str, position: int | None = None) -> Step:
        return self._step("error", f"Malformed JSON: {line[:200]}", position)

    def event(self, event: Mapping[str, Any], position: int | None = None) -> Iterator[Step]:
        kind = event.get("type", "")
        if kind == "assistant":
            message = event.get("message")
            message = message if isinstance(message, Mapping) else {}
            content = message.get("content")
            blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
            responded = False
            for block in blocks:
                btype = block.get("type", "")
                if btype == "text":
                    responded = True
                    yield self._step("llm_response", _text(block.get("text", "")), position)
                elif btype == "tool_use":
                    name = _text(block.get("name", "unknown"))[:80]
                    call_id = block.get("id", "")
                    if call_id:
                        self.tools[_text(call_id)[:200]] = name
                        if len(self.tools) > 20_000:  # ids only matter for the results that follow
                            self.tools.clear()
                    yield self._step("tool_call", name, position, tool=name,
                                     args=_args(block.get("input") or {}, self.limit))
                elif btype == "thinking":
                    responded = True
                    yield self._step("thinking", _text(block.get("thinking", "")), position)
            if not responded and message.get("content"):
                yield self._step("llm_response", "", position)
        elif kind == "user":
            message = event.get("message")
            content = message.get("content") if isinstance(message, Mapping) else None
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, Mapping) or block.get("type") != "tool_result":
                    continue
                inner = block.get("content", "")
                if isinstance(inner, list):
                    text = "\n".join(_text(i.get("text", "")) for i in inner
                                     if isinstance(i, Mapping) and i.get("type") == "text")
                else:
                    text = _text(inner)
                parent = self.tools.get(_text(block.get("tool_use_id", ""))[:200], "")
                yield self._step("tool_result", text, position, tool=parent, is_error=bool(block.get("is_error")))
        elif kind == "system":
            yield self._step("system", _text(event.get("message") or event.get("text") or ""), position)
        elif kind == "error":
            yield self._step("error", _text(event.get("message") or event.get("error") or str(event)[:2000]),
                             position)
        elif kind in ("rate_limit_event", "rate_limit"):
            yield self._step("rate_limit", _text(event.get("message") or str(event)[:2000]), position)
        elif kind == "result":
            yield self._step("system", f"result: {_text(event.get('subtype', ''))}", position)


def _loads(line: str) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return _MALFORMED


_MALFORMED = object()


def jsonl_steps(lines: Iterable[tuple[int, str | None]], meter: Meter) -> Iterator[Step]:
    """Steps of a JSONL trajectory, numbered as the official extractor numbers them. A line over the length
    limit is skipped (the official extractor would have made steps of it: later indices may be off by those)."""
    events = JsonlSteps(meter.limits)
    for number, line in lines:
        if line is None:
            meter.note(f"step indices after line {number} may be off by the steps that line held")
            continue
        stripped = line.strip()
        if not stripped:
            continue
        event = _loads(stripped)
        produced = [events.malformed(stripped)] if event is _MALFORMED else (
            list(events.event(event)) if isinstance(event, Mapping) else [])
        for step in produced:
            if not meter.step():
                return
            yield step


# --- logs ------------------------------------------------------------------------------------------

_MARKER = re.compile(
    r"^(?:=== Turn (?P<turn>\d+)\b.*===\s*$|\[(?P<tag>Claude|assistant|user|Tool|ToolResult(?::err)?|thinking|"
    r"system(?::[^\]\n]{0,60})?|error|Error|rate_limit|result|unknown:[^\]\n]{0,60}|stderr|exit_code)\](?: |$))")
_TAG_KIND = {"Claude": "llm_response", "assistant": "llm_response", "user": "log", "Tool": "tool_call",
             "ToolResult": "tool_result", "ToolResult:err": "tool_result", "thinking": "thinking", "error": "error",
             "Error": "error", "rate_limit": "rate_limit", "result": "system"}
# The closing parenthesis may be missing: the runner's path sanitising takes it into `<abs_path>`.
_TOOL_LINE = re.compile(r"^(?P<name>[\w.:-]{1,80})(?:\((?P<args>.*?)\)?)?\s*$", re.DOTALL)
_LOG_ARG_KEYS = ("file_path", "path", "command", "pattern", "url", "notebook_path")
_LOG_ARG = re.compile(r"(?:^|, )(?P<key>" + "|".join(_LOG_ARG_KEYS) + r")=")


def _log_tool_args(raw: str) -> dict[str, str]:
    """`key=value, key=value` as the official adapters print a tool call's arguments (values may hold ', ')."""
    starts = list(_LOG_ARG.finditer(raw))
    out = {}
    for i, match in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(raw)
        out[match.group("key")] = raw[match.end():end]
    return out


class _Block:
    def __init__(self, line: int, kind: str, tag: str, first: str, turn: int | None):
        self.line, self.kind, self.tag, self.turn = line, kind, tag, turn
        self.parts = [first]
        self.size = len(first)

    def add(self, text: str, limit: int) -> None:
        if self.size < 2 * limit:
            self.parts.append(text)
        self.size += len(text) + 1


def log_steps(lines: Iterable[tuple[int, str | None]], meter: Meter) -> Iterator[Step]:
    """Steps of an agent log: a marked block (an official adapter's summary line and the lines that continue
    it) or a JSONL event is one step at the line it starts on; any other line is a step of its own."""
    limit = meter.limits.step_chars
    events = JsonlSteps(meter.limits)
    block: _Block | None = None
    turn: int | None = None
    last_tool = ""

    def close(b: _Block) -> Step:
        nonlocal last_tool
        text = "\n".join(b.parts)
        if b.kind == "tool_call":
            match = _TOOL_LINE.match(text)
            name = match.group("name") if match else text.split("(", 1)[0][:80]
            args = _log_tool_args(match.group("args") or "") if match else {}
            last_tool = name
            return Step(position=b.line, kind="tool_call", text=window(text, limit), tool=name,
                        args={k: window(v, limit) for k, v in args.items()}, turn=b.turn)
        return Step(position=b.line, kind=b.kind, text=window(text, limit),
                    tool=last_tool if b.kind == "tool_result" else "", is_error=b.tag == "ToolResult:err",
                    turn=b.turn)

    for number, line in lines:
        if line is None:
            continue
        marker = _MARKER.match(line)
        if marker is None and block is not None:
            block.add(line, limit)
            continue
        if block is not None:
            if not meter.step():
                return
            yield close(block)
            block = None
        if marker is not None:
            if marker.group("turn"):
                turn = int(marker.group("turn")[:9])
                continue
            tag = marker.group("tag")
            if tag in ("stderr", "exit_code"):  # our client's log: what follows are plain lines
                if not meter.step():
                    return
                yield Step(position=number, kind="log", text=window(line, limit), turn=turn)
                continue
            kind = _TAG_KIND.get(tag, "system" if tag.startswith("system") else "log")
            block = _Block(number, kind, tag, line[marker.end():], turn)
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("{") and stripped.endswith("}"):
            event = _loads(stripped)
            if isinstance(event, Mapping) and event.get("type") in CLAUDE_EVENT_TYPES:
                for step in events.event(event, position=number):
                    if not meter.step():
                        return
                    yield step
                continue
        if not meter.step():
            return
        yield Step(position=number, kind="log", text=window(line, limit), turn=turn)
    if block is not None and meter.step():
        yield close(block)


def looks_like_jsonl(first_lines: list[str]) -> bool:
    """Do the first non-blank lines of a text read as Claude-Code events (then it is a trajectory)?"""
    seen = [line.strip() for line in first_lines if line.strip()][:5]
    if not seen:
        return False
    for line in seen:
        event = _loads(line)
        if not isinstance(event, Mapping) or event.get("type") not in CLAUDE_EVENT_TYPES:
            return False
    return True
