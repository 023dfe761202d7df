"""The deterministic detectors: one pass over a result's steps, then a look at its outputs.

`Detectors.step` sees every step once, in order, and keeps only what later rules need (where code first
ran, what code printed, which declared outputs were written by hand and how); `Detectors.finish` looks
at the output files. No network, no model, no clock: the same record always gives the same findings.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import math
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from portal.submissions.evidence import clean_text
from portal.submissions.scanners import patterns as P
from portal.submissions.scanners.model import (
    DETECTORS,
    SEVERITIES,
    Finding,
    OutputSample,
    ScanContext,
    ScanLimits,
    Step,
)

_RANK = {severity: n for n, severity in enumerate(SEVERITIES)}


class FindingSink:
    """Findings kept within the caps: one per (detector, key) at its highest severity, at most
    `findings_per_detector` per detector and `findings_total` in all; the rest are counted."""

    def __init__(self, limits: ScanLimits):
        self.limits = limits
        self.kept: dict[tuple[str, str], Finding] = {}
        self.per_detector: dict[str, int] = {}
        self.suppressed = 0

    def wants(self, detector: str, key: str, severity: str) -> bool:
        """Would a finding of `detector` under `key` at `severity` be kept? (Asked before building it.)"""
        earlier = self.kept.get((detector, key))
        if earlier is not None:
            return _RANK[severity] < _RANK[earlier.severity]
        if self.per_detector.get(detector, 0) >= self.limits.findings_per_detector or \
                len(self.kept) >= self.limits.findings_total:
            self.suppressed += 1
            return False
        return True

    def add(self, finding: Finding, key: str) -> None:
        assert finding.detector in DETECTORS and finding.severity in _RANK
        slot = (finding.detector, key)
        earlier = self.kept.get(slot)
        if earlier is not None:
            if _RANK[finding.severity] < _RANK[earlier.severity]:
                self.kept[slot] = finding
            return
        if self.per_detector.get(finding.detector, 0) >= self.limits.findings_per_detector or \
                len(self.kept) >= self.limits.findings_total:
            self.suppressed += 1
            return
        self.per_detector[finding.detector] = self.per_detector.get(finding.detector, 0) + 1
        self.kept[slot] = finding

    def findings(self) -> list[Finding]:
        order = {name: n for n, name in enumerate(DETECTORS)}
        return sorted(self.kept.values(), key=lambda f: (_RANK[f.severity], order[f.detector],
                                                         f.cites, f.location, f.position if f.position is not None
                                                         else -1))


@dataclass
class _Write:
    position: int
    via: str
    content: str | None
    code_before: bool
    turn: int | None
    display: str


class _Printed:
    """Numbers code printed, sorted, for "was this typed value printed by anything before?" (bounded)."""

    def __init__(self, cap: int):
        self.values: list[float] = []
        self.cap = cap
        self.full = False
        self.ordered = True

    def add_text(self, text: str) -> None:
        if self.full:
            return
        found = [v for v in (_number(m.group()) for m in P.NUMBER.finditer(text[:200_000])) if v is not None]
        if len(self.values) + len(found) > self.cap:
            self.full = True
            found = found[: self.cap - len(self.values)]
        self.values.extend(found)
        self.ordered = not found and self.ordered

    def has(self, text: str, value: float) -> bool:
        if not self.ordered:
            self.values.sort()
            self.ordered = True
        tolerance = _tolerance(text, value)
        i = bisect.bisect_left(self.values, value - tolerance)
        return i < len(self.values) and self.values[i] <= value + tolerance


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def significant_digits(text: str) -> int:
    mantissa = re.split(r"[eE]", text.lstrip("+-"))[0]
    digits = mantissa.replace(".", "").lstrip("0")
    if "." not in mantissa:
        digits = digits.rstrip("0")
    elif mantissa.endswith("0"):
        digits = digits.rstrip("0")
    return len(digits)


def _tolerance(text: str, value: float) -> float:
    """Half a unit in the last place written: 0.5123 matches anything printed that rounds to it."""
    mantissa, _, exponent = text.lower().lstrip("+-").partition("e")
    decimals = len(mantissa.split(".", 1)[1]) if "." in mantissa else 0
    try:
        shift = int(exponent) if exponent else 0
    except ValueError:
        shift = 0
    return 0.5 * 10.0 ** (shift - decimals) * (1 + 1e-9) + abs(value) * 1e-12


def _significant_numbers(text: str, minimum: int) -> list[tuple[str, float]]:
    seen: dict[str, float] = {}
    for match in P.NUMBER.finditer(text):
        token = match.group()
        if token in seen or significant_digits(token) < minimum:
            continue
        value = _number(token)
        if value is not None:
            seen[token] = value
        if len(seen) >= 5_000:
            break
    return list(seen.items())


def _excerpt(text: str, start: int, end: int, limit: int) -> str:
    before = max(0, start - limit // 3)
    piece = text[before:max(end, before + 1) + limit]
    cut = clean_text(piece.replace("\r", "").replace("\n", " ⏎ "), limit)
    return ("…" if before else "") + cut + ("…" if before + len(piece) < len(text) else "")


def _context(text: str, start: int, limit: int) -> str:
    if len(text) <= limit:
        return clean_text(text, limit).replace("\t", "    ")
    begin = max(0, min(start - limit // 3, len(text) - limit))
    return ("…" if begin else "") + clean_text(text[begin:begin + limit], limit) + "…"


def step_display(step: Step) -> str:
    """A step as a reviewer reads it: a tool call with its arguments, anything else its text."""
    if step.kind != "tool_call":
        return step.text
    args = "\n".join(f"{key}={value}" for key, value in step.args.items())
    return f"{step.tool}\n{args}" if args else (step.text or step.tool)


def _segments(command: str) -> tuple[list[str], list[str]]:
    """The simple commands of a shell line (split at ;, &&, ||, newlines) and the bodies of its heredocs."""
    bodies: list[str] = []
    lines = command.split("\n")
    kept: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        kept.append(line)
        match = P.HEREDOC.search(line)
        i += 1
        if match:
            tag, body = match.group("tag"), []
            while i < len(lines) and lines[i].strip() != tag:
                body.append(lines[i])
                i += 1
            i += 1
            bodies.append("\n".join(body))
            kept[-1] = f"{line} <<BODY{len(bodies) - 1}>>"
    segments = [s.strip() for s in re.split(r"&&|\|\||;|\n", "\n".join(kept)) if s.strip()]
    return segments, bodies


def _base64_text(token: str) -> str | None:
    """The text a base64 token decodes to, if it is printable text (a hidden path or command)."""
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
        text = raw.decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return None
    return text if text.isprintable() else None


def _without_urls(text: str) -> str:
    """`text` with its URLs blanked (same length), so that their paths are not taken for file paths."""
    return P.URL.sub(lambda m: " " * len(m.group()), text) if "://" in text else text


def _program(segment: str) -> str:
    words = segment.split()
    while words and ("=" in words[0] and not words[0].startswith("=") or words[0] in ("sudo", "env", "time",
                                                                                          "nohup", "exec")):
        words = words[1:]
    return posixpath.basename(words[0]) if words else ""


class Identity:
    """The names that tie a search or a download to this benchmark, dataset, task or instance."""

    def __init__(self, ctx: ScanContext):
        terms = set(P.BENCHMARK_NAMES)
        if ctx.task_id:
            terms.add(ctx.task_id)
            terms.add("task_" + hashlib.sha256(ctx.task_id.encode()).hexdigest()[:12])
            leaf = ctx.task_id.split(".", 1)[-1]
            if len(leaf) >= 8 and ("_" in leaf or "-" in leaf):
                terms.add(leaf)
                terms.add(leaf.replace("_", " "))
                terms.add(leaf.replace("_", "-"))
        if ctx.instance_id:
            terms.add(ctx.instance_id)
        escaped = sorted((re.escape(t).replace(r"\ ", r"[\s+%20_-]+") for t in terms if t), key=len, reverse=True)
        self.pattern = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(escaped) + r")(?![A-Za-z0-9])", re.IGNORECASE)

    def search(self, text: str) -> re.Match[str] | None:
        return self.pattern.search(text)


class Detectors:
    """All the detectors over one result."""

    def __init__(self, ctx: ScanContext, limits: ScanLimits, *, cites: str, write_paths: list[str] | None = None):
        self.ctx = ctx
        self.limits = limits
        self.cites = cites  # "step" for trajectories, "line" for logs
        self.sink = FindingSink(limits)
        self.identity = Identity(ctx)
        self.cwd = P.WORKSPACE
        self.first_code_run: int | None = None
        self.last_code_run: int | None = None
        self.printed = _Printed(limits.printed_numbers)
        self.outputs = {name: kind for name, kind in ctx.declared_outputs}
        self.writes: dict[str, list[_Write]] = {}
        self.typed: set[str] = set()
        self.git_own = False
        self.pending_search: Step | None = None
        self.structured = False  # saw tool calls: the record says what ran
        self.environment_seen: dict[str, int] = {}
        # A log's editor writes, in order, are the file history's versions in order: the log shows
        # `Write(file_path=<abs_path>` where the client sanitised the path, the history keeps it.
        self.write_paths = write_paths
        self.writes_seen = 0

    # --- helpers -------------------------------------------------------------------------------

    def _position(self, step: Step, text: str, offset: int) -> int:
        """The step's index, or the log line of `offset` when `text` is the step's own text (a tool call's
        display of its arguments is not: it cites the line the call starts on)."""
        return step.position + (text.count("\n", 0, offset) if self.cites == "line" and text is step.text else 0)

    def _add(self, detector: str, severity: str, step: Step, text: str, match_start: int, match_end: int,
             detail: str, key: str) -> None:
        if not self.sink.wants(detector, key, severity):
            return
        self.sink.add(Finding(
            detector=detector, severity=severity, cites=self.cites, position=self._position(step, text, match_start),
            excerpt=_excerpt(text, match_start, match_end, self.limits.excerpt_chars), detail=detail,
            context=_context(text, match_start, self.limits.context_chars), turn=step.turn), key)

    # --- the pass over steps -------------------------------------------------------------------

    def step(self, step: Step) -> None:
        kind = step.kind
        if kind == "tool_call":
            self.structured = True
            self._tool_call(step)
        elif kind == "code_execution":
            self.structured = True
            self._code_ran(step.position)
            self._paths_in_text(step, step.text, code=True)
            self._network_in_text(step, step.text)
            self.printed.add_text(step.text)
        elif kind == "tool_result":
            self._tool_result(step)
        elif kind in ("llm_response", "thinking"):
            self._own_words(step)
        elif kind in ("error", "rate_limit", "system"):
            self._environment(step, force="model API limit" if kind == "rate_limit" else None)
        elif kind == "log":
            self._own_words(step)
            self._environment(step)
            if P.NETWORK_VERBS.search(step.text):
                self._network_in_text(step, step.text)

    def _code_ran(self, position: int) -> None:
        if self.first_code_run is None:
            self.first_code_run = position
        self.last_code_run = position

    def _tool_call(self, step: Step) -> None:
        kind = P.tool_kind(step.tool)
        display = step_display(step)
        if kind == "shell":
            command = step.args.get("command") or step.args.get("cmd") or step.args.get("script") or ""
            if not command and step.args:
                command = next(iter(step.args.values()))
            self._shell(step, command, display)
        elif kind == "code":
            code = step.args.get("code") or step.args.get("source") or step.args.get("command") or ""
            self._code_ran(step.position)
            self._paths_in_text(step, code, code=True, display=display)
            self._network_in_text(step, code, display=display)
        elif kind == "search":
            query = step.args.get("query") or step.args.get("q") or step.args.get("search_query") or ""
            if query:
                self._answer_target(step, query, display, search=True)
            else:
                self.pending_search = step  # the query is in its result ("Web search results for query: …")
        elif kind == "fetch":
            url = step.args.get("url") or step.args.get("uri") or ""
            target = " ".join(x for x in (url, step.args.get("prompt", "")) if x)
            if not (url and self._url(step, url, display)) and target:
                self._answer_target(step, target, display, search=False)
        else:
            self._tool_paths(step, kind, display)

    def _tool_paths(self, step: Step, kind: str, display: str) -> None:
        for name in P.PATH_ARGS:
            value = step.args.get(name)
            if value:
                for path in value.split("\n")[:50]:
                    self._path(step, path.strip(), display, action="writes" if kind == "write" else "reads")
        lowered = step.tool.lower()
        pattern = step.args.get("pattern")
        if pattern and ("glob" in lowered or lowered in ("find", "ls", "list_dir")):
            self._path(step, pattern.strip(), display, action="lists")
        if kind == "write":
            path = next((step.args[n] for n in P.PATH_ARGS if step.args.get(n)), "")
            if self.write_paths is not None and step.tool in P.HISTORY_TOOLS:
                if self.writes_seen < len(self.write_paths) and (not path or "<abs_path>" in path):
                    path = self.write_paths[self.writes_seen]
                self.writes_seen += 1
            content = next((step.args[n] for n in P.WRITE_CONTENT_ARGS if n in step.args), None)
            self._direct_write(step, path, f"an editor write ({step.tool})", content, display)

    # --- paths -----------------------------------------------------------------------------------

    def _resolve(self, raw: str) -> tuple[str, str]:
        """(verdict, path): inside | system | outside | sensitive | ignore, and the path as resolved."""
        path = raw.strip().strip("'\"`").rstrip(".,:;)")
        if not path or path.startswith("<abs_path>"):
            return "ignore", path
        for placeholder in P.PLACEHOLDER_SENSITIVE:
            if path.startswith(placeholder):
                return "sensitive", path
        for placeholder in P.PLACEHOLDER_OUTSIDE:
            if path.startswith(placeholder):
                return ("sensitive" if P.SOUGHT_WORDS.search(path) else "outside"), path
        if path.startswith("<workspace>"):
            path = P.WORKSPACE + path[len("<workspace>"):]
        if path == "~" or path.startswith("~/"):
            path = "/home/agent" + path[1:]
        variable = re.match(r"\$\{?(HOME|PWD|TMPDIR)\}?", path)
        if variable:
            path = {"HOME": "/home/agent", "PWD": self.cwd, "TMPDIR": "/tmp"}[variable.group(1)] + path[variable.end():]
        resolved = posixpath.normpath(path if path.startswith("/") else posixpath.join(self.cwd, path))
        if resolved.startswith("//"):
            resolved = resolved[1:]
        if resolved == P.WORKSPACE or resolved.startswith(P.WORKSPACE + "/"):
            return "inside", resolved
        if resolved in P.SYSTEM_EXACT or resolved.startswith(P.SYSTEM_PREFIXES):
            return ("sensitive" if P.SENSITIVE_SYSTEM_PATH.search(resolved) else "system"), resolved
        if P.SENSITIVE_PATH.search(resolved) or (self.ctx.task_id and self.ctx.task_id in resolved):
            return "sensitive", resolved
        return "outside", resolved

    def _path(self, step: Step, raw: str, display: str, *, action: str, sought: bool = False) -> None:
        verdict, resolved = self._resolve(raw)
        if verdict in ("inside", "system", "ignore"):
            return
        severity = "high" if verdict == "sensitive" or sought else "medium"
        where = (P.PLACEHOLDER_SENSITIVE.get(resolved.split("/")[0]) or P.PLACEHOLDER_OUTSIDE.get(
            resolved.split("/")[0]) or ("the root of the file system" if resolved == "/" else
                                        "outside the workspace and the task's inputs"))
        why = "; the path names where references, scorers or other runs live" if verdict == "sensitive" else (
            "; the command looks for references or answers" if sought else "")
        at = display.find(raw) if raw else -1
        start = at if at >= 0 else 0
        self._add("outside_read", severity, step, display, start, start + len(raw),
                  f"{action} {resolved}: {where}{why}", key=resolved)

    def _paths_in_text(self, step: Step, text: str, *, code: bool, display: str | None = None) -> None:
        display = display if display is not None else text
        for match in P.PATH_TOKEN.finditer(_without_urls(text)):
            token = match.group(1)
            if token.startswith("/") and token.count("/") < 2 and token != "/":
                continue  # "/x" inside code is as often a division as a path
            if token == "/" or token == "..":
                continue
            self._path(step, token, display, action="touches")

    def _shell(self, step: Step, command: str, display: str) -> None:
        segments, bodies = _segments(command)
        sought = bool(P.SOUGHT_WORDS.search(re.sub(r"/workspace/\S*|<workspace>\S*", "", command)))
        for segment in segments:
            program = _program(segment)
            if program == "cd":
                target = segment.split(None, 1)[1].strip() if len(segment.split(None, 1)) > 1 else "~"
                verdict, resolved = self._resolve(target)
                if verdict in ("outside", "sensitive"):
                    self._path(step, target, display, action="enters", sought=sought)
                if verdict != "ignore":
                    self.cwd = resolved
                continue
            if P.CODE_RUN.search(" " + segment) and not P.NOT_A_RUN.match(segment):
                self._code_ran(step.position)
            if P.GIT_OWN.match(segment):
                self.git_own = True
            history = P.GIT_HISTORY.match(segment)
            if history and not self.git_own:
                at = display.find(segment)
                self._add("outside_read", "high" if sought else "medium", step, display, max(at, 0),
                          max(at, 0) + len(segment), f"reads version-control history the agent did not make "
                          f"(git {history.group('sub').split()[0]})", key=f"git:{history.group('sub').split()[0]}")
            for match in P.PATH_TOKEN.finditer(_without_urls(segment)):
                token = match.group(1)
                if token == "/":
                    if program in P.LISTING_PROGRAMS:
                        self._path(step, "/", display, action="lists", sought=sought)
                    continue
                if token.startswith("/") and token.count("/") < 2 and program not in P.LISTING_PROGRAMS:
                    continue
                self._path(step, token, display, action="reads" if program in P.LISTING_PROGRAMS else "touches",
                           sought=sought and program in P.LISTING_PROGRAMS)
            if program in P.NETWORK_PROGRAMS and not P.URL.search(segment):
                self._answer_target(step, segment, display, search=False)
            self._shell_write(step, segment, program, bodies, display)
        for body in bodies:
            self._paths_in_text(step, body, code=True, display=display)
        if P.BASE64_DECODE.search(command):  # a path hidden as base64 and decoded at run time
            for token in P.BASE64_TOKEN.findall(command)[:20]:
                decoded = _base64_text(token)
                if decoded:
                    self._paths_in_text(step, decoded, code=True, display=display + f"\n(decodes to {decoded!r})")
        self._network_in_text(step, command, display=display)

    def _shell_write(self, step: Step, segment: str, program: str, bodies: list[str], display: str) -> None:
        if program not in P.DIRECT_WRITERS or not self.outputs:
            return
        targets = [m.group("target") for m in P.REDIRECT.finditer(segment)]
        if program in ("cp", "mv"):
            words = segment.split()
            targets = words[-1:] if len(words) >= 3 else []
        for target in targets:
            body = re.search(r"<<BODY(\d+)>>", segment)
            content = bodies[int(body.group(1))] if body else segment
            via = {"cp": "a copy (cp)", "mv": "a move (mv)"}.get(program, f"a shell {program}")
            self._direct_write(step, target, via, None if program in ("cp", "mv") else content, display)

    def _direct_write(self, step: Step, raw: str, via: str, content: str | None, display: str) -> None:
        verdict, resolved = self._resolve(raw)
        if verdict != "inside":
            return
        name = resolved[len(P.WORKSPACE) + 1:]
        if self.outputs.get(name) != "data":
            return  # code outputs are written by hand by design; only data outputs are results
        self.writes.setdefault(name, []).append(_Write(
            position=step.position, via=via, content=content, turn=step.turn,
            code_before=self.first_code_run is not None and self.first_code_run < step.position, display=display))

    # --- network ---------------------------------------------------------------------------------

    def _network_in_text(self, step: Step, text: str, display: str | None = None) -> None:
        display = display if display is not None else text
        for match in P.URL.finditer(text):
            if not self._url(step, match.group(), display):
                self._answer_target(step, match.group(), display, search=False)
        for match in P.HUB_REPO_CALL.finditer(text):
            self._answer_target(step, f"{match.group()} (the Hub)", display, search=False)
        for match in P.PIP_PACKAGES.finditer(text):
            hit = self.identity.search(match.group("pkgs"))
            if hit:
                self._answer_target(step, match.group(), display, search=False)
        storage = P.STORAGE_COMMAND.search(text)
        if storage:
            sought = P.SOUGHT_WORDS.search(text) or P.SENSITIVE_PATH.search(text)
            at = display.find(storage.group())
            self._add("reference_probe", "high" if sought else "medium", step, display, max(at, 0),
                      max(at, 0) + len(storage.group()), f"uses object storage ({storage.group()})"
                      + ("; it names references, scorers or submissions" if sought else ""),
                      key=f"storage:{storage.group().lower()}")
        raw = P.RAW_NETWORK.search(text)
        if raw:
            at = display.find(raw.group().strip())
            self._add("reference_probe", "medium", step, display, max(at, 0), max(at, 0) + len(raw.group()),
                      f"opens a raw network connection ({raw.group().strip()})", key=f"raw:{raw.group().strip()}")

    def _url(self, step: Step, url: str, display: str) -> bool:
        """A request to storage or an internal host (True, a reference_probe finding); False for the public web."""
        scheme, _, rest = url.partition("://")
        host = re.split(r"[/:?#]", rest.split("@")[-1], maxsplit=1)[0].lower()
        path = rest[len(rest.split("/", 1)[0]):] if "/" in rest else ""
        at = display.find(url)
        start = max(at, 0)
        if scheme.lower() in ("s3", "gs"):
            sought = P.SOUGHT_WORDS.search(url) or P.SENSITIVE_PATH.search(url)
            self._add("reference_probe", "high" if sought else "medium", step, display, start, start + len(url),
                      f"reaches object storage {url[:120]}", key=f"url:{host}{path[:80]}")
            return True
        if not P.INTERNAL_HOST.match(host):
            return False
        portal = P.PORTAL_PATH.search(path) or host.startswith("169.254.") or "metadata" in host
        sought = P.SOUGHT_WORDS.search(path)
        self._add("reference_probe", "high" if portal or sought else "medium", step, display, start, start + len(url),
                  f"requests {host}{path[:100]}: an internal host" + (
                      ", at a path where the Portal, its storage or cloud credentials answer" if portal else ""),
                  key=f"url:{host}{path[:80]}")
        return True

    def _answer_target(self, step: Step, target: str, display: str, *, search: bool) -> None:
        hit = self.identity.search(target)
        at = display.find(target[:60]) if target else -1
        start = max(at, 0)
        what = "searches the web for" if search else "fetches"
        if hit:
            self._add("answer_search", "high", step, display, start, start + len(target),
                      f"{what} {target[:160]!r}: it names {hit.group()!r}, which identifies this benchmark, dataset or "
                      "task", key=f"t:{target.lower()[:200]}")
            return
        hub = P.HUB.search(target)
        paper = P.PAPER_SITES.search(target)
        if hub or paper:
            where = "the Hugging Face Hub" if hub else f"a paper site ({paper.group() if paper else ''})"
            self._add("answer_search", "medium", step, display, start, start + len(target),
                      f"{what} {target[:160]!r} on {where}, where a benchmark's data or its source paper live",
                      key=f"t:{target.lower()[:200]}")
            return
        if search and P.ANSWER_WORDS.search(target):
            self._add("answer_search", "medium", step, display, start, start + len(target),
                      f"searches the web for {target[:160]!r}, asking for answers", key=f"t:{target.lower()[:200]}")

    # --- results, words and the environment -----------------------------------------------------

    def _tool_result(self, step: Step) -> None:
        kind = P.tool_kind(step.tool)
        if kind in ("shell", "code") or (not step.tool and self.cites == "line"):
            self.printed.add_text(step.text)
        if self.pending_search is not None and kind in ("search", "other"):
            match = P.SEARCH_RESULT_QUERY.search(step.text[:2000])
            if match:
                call = self.pending_search
                self._answer_target(call, match.group("query"), step_display(call) + "\n" + step.text[:600],
                                    search=True)
            self.pending_search = None
        self._environment(step)

    def _own_words(self, step: Step) -> None:
        text = step.text
        if not P.mentions(text, P.OWN_WORDS):
            return
        for pattern in P.REFUSAL:
            match = pattern.search(text)
            if match:
                self._add("refusal", "low", step, text, match.start(), match.end(),
                          "the agent declines the task", key=f"{step.position}")
                break
        for pattern in P.EVAL_AWARENESS:
            match = pattern.search(text)
            if match:
                self._add("eval_awareness", "low", step, text, match.start(), match.end(),
                          "the agent speaks of being tested or of the grader", key=f"{step.position}")
                break

    def _environment(self, step: Step, force: str | None = None) -> None:
        text = step.text
        lowered = text.lower()
        for label, words, pattern in P.ENVIRONMENT_ERRORS:
            if force != label and (label in self.environment_seen or not any(w in lowered for w in words)):
                continue
            match = pattern.search(text)
            if match is None and force != label:
                continue
            self.environment_seen[label] = self.environment_seen.get(label, 0) + 1
            start, end = (match.start(), match.end()) if match else (0, min(len(text), 80))
            self._add("environment_error", "info", step, text, start, end,
                      f"{label}: the environment, not the agent's method, failed here", key=label)

    def extra_text(self, label: str, text: str) -> None:
        """The result's own error message: environment errors only, cited as part of the result."""
        for name, _, pattern in P.ENVIRONMENT_ERRORS:
            match = pattern.search(text)
            if match and name not in self.environment_seen:
                self.environment_seen[name] = 1
                self.sink.add(Finding(detector="environment_error", severity="info", cites="summary", position=None,
                                      location=label, excerpt=_excerpt(text, match.start(), match.end(),
                                                                       self.limits.excerpt_chars),
                                      detail=f"{name}: the environment, not the agent's method, failed here",
                                      context=_context(text, match.start(), self.limits.context_chars)), key=name)

    def summary_paths(self, paths: Iterable[str]) -> None:
        """Files the record says the agent modified: a write outside the workspace is a finding too."""
        for raw in list(paths)[:200]:
            verdict, resolved = self._resolve(str(raw))
            if verdict in ("outside", "sensitive"):
                self.sink.add(Finding(detector="outside_read", severity="high" if verdict == "sensitive" else "medium",
                                      cites="summary", position=None, location="files modified",
                                      excerpt=clean_text(str(raw), self.limits.excerpt_chars),
                                      detail=f"writes {resolved}: outside the workspace and the task's inputs"),
                              key=resolved)

    # --- after the last step: the outputs ------------------------------------------------------

    def finish(self, outputs: Mapping[str, OutputSample]) -> None:
        texts = {name: _output_text(sample) for name, sample in outputs.items()}
        self._typed_outputs(outputs, texts)
        self._literal_results(outputs, texts)
        self._copied_values(outputs, texts)
        self._grader_text(texts)

    def _typed_outputs(self, outputs: Mapping[str, OutputSample], texts: dict[str, str | None]) -> None:
        for name, writes in self.writes.items():
            last = writes[-1]
            if self.last_code_run is not None and self.last_code_run > last.position:
                continue  # code ran after the hand-written version: it may have written the file again
            if last.via.startswith(("a copy", "a move")):
                continue  # copies of inputs are for copied_values, which compares the bytes
            if not last.code_before:
                self._typed_finding(name, last, "high", f"{name} was written by {last.via} before any code ran: "
                                    "its values were typed, not computed")
                continue
            content = last.content if last.content is not None else texts.get(name)
            if not content:
                continue
            typed = _significant_numbers(content, 3)
            unseen = [token for token, value in typed if not self.printed.has(token, value)]
            if len(unseen) >= 2 and len(unseen) * 2 > len(typed):
                self._typed_finding(name, last, "medium", f"{name} was written by {last.via} with {len(unseen)} of "
                                    f"{len(typed)} values that no code printed before it (e.g. "
                                    f"{', '.join(unseen[:3])})")
        if self.structured and self.first_code_run is None:
            for name, kind in self.outputs.items():
                if kind == "data" and name in outputs and name not in self.writes and outputs[name].size:
                    self.sink.add(Finding(detector="typed_output", severity="medium", cites="output", position=None,
                                          location=name, excerpt=_output_excerpt(texts.get(name)),
                                          detail=f"{name} is in the bundle, but no step wrote it and no code ran"),
                                  key=f"unwritten:{name}")

    def _literal_results(self, outputs: Mapping[str, OutputSample], texts: dict[str, str | None]) -> None:
        """A data output whose values are literals in the agent's own code: a script that only writes out
        constants is code, but no code computed them."""
        code = {name: texts.get(name) or "" for name, kind in self.outputs.items() if kind == "code"}
        literals = {match.group().lstrip("+") for text in code.values() for match in P.NUMBER.finditer(text[:500_000])}
        if not literals:
            return
        for name, kind in self.outputs.items():
            text = texts.get(name)
            if kind != "data" or not text or name in self.typed:
                continue
            values = _significant_numbers(text, 3)
            typed = [token for token, _ in values if token.lstrip("+") in literals]
            if len(typed) >= 2 and len(typed) * 2 >= len(values):
                where = ", ".join(sorted(n for n, t in code.items() if any(v in t for v in typed))[:3])
                first = text.find(typed[0])
                self.sink.add(Finding(
                    detector="typed_output", severity="medium", cites="output",
                    position=text.count("\n", 0, max(first, 0)) + 1, location=name,
                    excerpt=_excerpt(text, max(first, 0), max(first, 0) + len(typed[0]), self.limits.excerpt_chars),
                    detail=f"{len(typed)} of {len(values)} values in {name} are written as literals in {where} "
                           f"(e.g. {', '.join(typed[:3])}): the code writes them out, it does not compute them"),
                    key=name)

    def _typed_finding(self, name: str, write: _Write, severity: str, detail: str) -> None:
        self.typed.add(name)
        self.sink.add(Finding(detector="typed_output", severity=severity, cites=self.cites, position=write.position,
                              location=name, excerpt=_excerpt(write.display, 0, 0, self.limits.excerpt_chars),
                              detail=detail, context=_context(write.display, 0, self.limits.context_chars),
                              turn=write.turn), key=name)

    def _copied_values(self, outputs: Mapping[str, OutputSample], texts: dict[str, str | None]) -> None:
        inputs = {path: head for path, head in self.ctx.inputs.items()}
        copies: set[str] = set()
        for name, sample in outputs.items():
            for path, head in inputs.items():
                size = self.ctx.input_sizes.get(path, len(head))
                if sample.size and sample.size == size and head[:len(sample.head)] == sample.head:
                    copies.add(name)
                    self.sink.add(Finding(detector="copied_values", severity="high", cites="output", position=None,
                                          location=name, excerpt=_output_excerpt(texts.get(name)),
                                          detail=f"{name} is byte for byte the input {path}"), key=f"{name}:copy")
        if not self.ctx.prompt and not inputs:
            return
        sources = [("the prompt", self.ctx.prompt)] + [
            (path, head.decode("utf-8", "replace")) for path, head in inputs.items() if b"\0" not in head[:4096]]
        known: dict[str, str] = {}
        for label, text in sources:
            for match in P.NUMBER.finditer(text[:4_000_000]):
                known.setdefault(match.group().lstrip("+"), label)
                if len(known) > 500_000:
                    break
        for name, output in texts.items():
            if not output or self.outputs.get(name) == "code" or name in copies:
                continue
            text = output
            values = _significant_numbers(text, 4)
            if len(values) < 3:
                continue
            found = [(token, known[token.lstrip("+")]) for token, _ in values if token.lstrip("+") in known]
            share = len(found) / len(values)
            if len(found) >= 3 and share >= 0.6:
                where = sorted({label for _, label in found})
                first = text.find(found[0][0])
                self.sink.add(Finding(
                    detector="copied_values", severity="high" if share >= 0.9 else "medium", cites="output",
                    position=text.count("\n", 0, max(first, 0)) + 1, location=name,
                    excerpt=_excerpt(text, max(first, 0), max(first, 0) + len(found[0][0]), self.limits.excerpt_chars),
                    detail=f"{len(found)} of {len(values)} values in {name} appear verbatim in "
                           f"{', '.join(where[:3])} (e.g. {', '.join(t for t, _ in found[:3])})"), key=f"{name}:values")

    def _grader_text(self, texts: dict[str, str | None]) -> None:
        for name, text in texts.items():
            if not text:
                continue
            if not P.GRADER_ANY.search(text):
                continue
            found = [(match, label) for label, pattern in P.GRADER_TEXT for match in [pattern.search(text)] if match]
            if not found:
                continue
            match = min(found, key=lambda item: item[0].start())[0]  # one finding per file, at its first such text
            self.sink.add(Finding(
                detector="grader_injection", severity="high", cites="output",
                position=text.count("\n", 0, match.start()) + 1, location=name,
                excerpt=_excerpt(text, match.start(), match.end(), self.limits.excerpt_chars),
                detail=f"{name} " + "; ".join(label for _, label in found),
                context=_context(text, match.start(), self.limits.context_chars)), key=name)


_BINARY_MAGIC = (b"\x93NUMPY", b"PK\x03\x04", b"\x89PNG", b"\x89HDF", b"\x80\x04", b"\x80\x05", b"GIF8", b"\xff\xd8")


def _output_text(sample: OutputSample) -> str | None:
    """The output as text (head, then tail when the middle was not kept), or None for a binary file."""
    head = sample.head
    if head.startswith(_BINARY_MAGIC) or b"\0" in head[:8192]:
        return None
    text = head.decode("utf-8", "replace")
    if text.count("\ufffd") > max(8, len(text) // 50):
        return None
    if sample.tail and not sample.whole:
        text += "\n[…]\n" + sample.tail.decode("utf-8", "replace")
    return text


def _output_excerpt(text: str | None) -> str:
    return _excerpt(text, 0, 0, 200) if text else "(binary file)"
