"""``code_analysis``: regex and import checks on one source file (contract §2.9)."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import Any

from ..registry import Scorer, register_scorer
from ..types import ScoreDetail
from .common import checks_score, weight_of

_FILE_IN_PATTERN = re.compile(r"([\w\-]+)\\?\.(png|jpe?g|csv|npy|json|txt|pdf|svg)\b", re.IGNORECASE)


def imported_modules(source: str) -> list[str]:
    """Absolute imports of ``source``; ``from x import y`` yields ``x`` and ``x.y``. Raises SyntaxError."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def strip_comments_and_docstrings(source: str) -> str:
    """``source`` with ``#`` comments and expression-statement strings blanked (positions kept)."""
    lines = source.splitlines(keepends=True)
    spans: list[tuple[tuple[int, int], tuple[int, int]]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.COMMENT:
                spans.append((tok.start, tok.end))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return _strip_comments_by_scan(source)
    try:
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Expr)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                spans.append(
                    ((node.lineno, node.col_offset), (node.end_lineno or node.lineno, node.end_col_offset or 0))
                )
    except SyntaxError:
        pass
    for (start_line, start_col), (end_line, end_col) in spans:
        for line_no in range(start_line, end_line + 1):
            line = lines[line_no - 1]
            begin = start_col if line_no == start_line else 0
            end = end_col if line_no == end_line else len(line.rstrip("\r\n"))
            lines[line_no - 1] = line[:begin] + " " * (end - begin) + line[end:]
    return "".join(lines)


def _strip_comments_by_scan(source: str) -> str:
    # Fallback for code that does not tokenize: drop '#...' outside simple string literals.
    out, quote, i = [], "", 0
    while i < len(source):
        ch = source[i]
        if quote:
            out.append(ch)
            if ch == "\\" and i + 1 < len(source):
                out.append(source[i + 1])
                i += 1
            elif source.startswith(quote, i):
                out.append(source[i + 1 : i + len(quote)])
                i += len(quote) - 1
                quote = ""
        elif ch == "#":
            while i < len(source) and source[i] != "\n":
                i += 1
            continue
        elif ch in "'\"":
            quote = ch * 3 if source.startswith(ch * 3, i) else ch
            out.append(source[i : i + len(quote)])
            i += len(quote) - 1
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _file_named_by_pattern(pattern: str, pred_dir: Path) -> str | None:
    for match in _FILE_IN_PATTERN.finditer(pattern):
        filename = f"{match.group(1)}.{match.group(2)}"
        if (pred_dir / filename).is_file():
            return filename
        if any(p.is_file() for p in pred_dir.rglob(filename)):
            return filename
    return None


@register_scorer("code_analysis")
class CodeAnalysisScorer(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict[str, Any]) -> ScoreDetail:
        pred_dir = Path(pred_dir)
        weight = weight_of(config)
        mode = config.get("scoring_mode", "all_or_nothing")
        target = str(config.get("target_file", "simulation.py"))
        path = pred_dir / target
        if not path.is_file():
            return ScoreDetail(
                "code_analysis", 0.0, weight, False, {"error": f"Missing file: {target}"}, f"Missing file: {target}"
            )
        try:
            source = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            # Deliberate deviation (contract open question 7): upstream crashes here, which
            # lets an agent turn a zero into "not scored". A non-UTF-8 file is the agent's zero.
            return ScoreDetail(
                "code_analysis",
                0.0,
                weight,
                False,
                {"error": f"{target} is not UTF-8: {exc}"},
                f"{target} is not valid UTF-8",
            )

        results = [self._run_check(check, source, pred_dir) for check in config.get("checks") or []]
        if "min_lines" in config or "max_lines" in config:
            results.append(self._line_count(source, config))
        n_passed = sum(1 for r in results if r["passed"])
        score = checks_score(mode, n_passed, len(results), weight)
        details: dict[str, Any] = {"checks": results, "scoring_mode": mode, "target_file": target}
        kernel = [r["count"] for r in results if "kernel" in str(r.get("pattern", "")) and "count" in r]
        if kernel:
            details["kernel_count"] = kernel[0]
        failed = [r["message"] for r in results if not r["passed"]]
        return ScoreDetail("code_analysis", score, weight, n_passed == len(results), details, "; ".join(failed))

    def _run_check(self, check: Any, source: str, pred_dir: Path) -> dict[str, Any]:
        if not isinstance(check, dict):
            return {"passed": False, "message": f"Unknown check: {check!r}"}
        if "forbidden_imports" in check:
            return self._forbidden_imports(check["forbidden_imports"], source)
        if "pattern" not in check:
            return {"passed": False, "message": f"Unknown check: {check!r}"}
        pattern = str(check["pattern"])
        result: dict[str, Any] = {"pattern": pattern, "passed": True, "message": ""}
        # re.error propagates on purpose: a bad regex is the task author's bug (crash).
        count = len(re.findall(pattern, source))
        result["count"] = count
        if check.get("required"):
            if count == 0:
                satisfied = _file_named_by_pattern(pattern, pred_dir)
                if satisfied is None:
                    result.update(passed=False, message=f"Required pattern not found: {pattern}")
                    return result
                result["satisfied_by_file"] = satisfied
        elif check.get("forbidden"):
            code_count = len(re.findall(pattern, strip_comments_and_docstrings(source)))
            result["code_count"] = code_count
            if code_count:
                result.update(passed=False, message=f"Forbidden pattern found: {pattern} ({code_count}x)")
                return result
            if count:
                result["message"] = f"Forbidden pattern only in comments/docstrings: {pattern}"
        if "min_count" in check and count < int(check["min_count"]):
            result.update(passed=False, message=f"Pattern {pattern} found {count}x, need >= {check['min_count']}")
        return result

    def _forbidden_imports(self, modules: Any, source: str) -> dict[str, Any]:
        modules = [modules] if isinstance(modules, str) else [str(m) for m in modules or []]
        result: dict[str, Any] = {"forbidden_imports": modules, "passed": True, "message": ""}
        try:
            imported = imported_modules(source)
        except SyntaxError as exc:
            result.update(passed=False, message=f"Cannot parse code for import check: {exc.msg} (line {exc.lineno})")
            return result
        hits = sorted({name for name in imported for mod in modules if name == mod or name.startswith(mod + ".")})
        if hits:
            result.update(passed=False, found=hits, message=f"Forbidden imports: {', '.join(hits)}")
        return result

    def _line_count(self, source: str, config: dict[str, Any]) -> dict[str, Any]:
        lines = len(source.splitlines())
        result: dict[str, Any] = {"check": "line_count", "lines": lines, "passed": True, "message": ""}
        if "min_lines" in config and lines < int(config["min_lines"]):
            result.update(passed=False, message=f"{lines} lines < min_lines {config['min_lines']}")
        elif "max_lines" in config and lines > int(config["max_lines"]):
            result.update(passed=False, message=f"{lines} lines > max_lines {config['max_lines']}")
        return result
