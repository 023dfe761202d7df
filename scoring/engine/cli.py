"""``python -m scoring.engine``: score / score-batch / validate / public-eval, JSON results on stdout.

``score`` prints one result as the last stdout line. ``score-batch`` scores several staged
prediction dirs of one task (each job may name its own reference and parameters) in one process
and prints one line per job, ``{"job": <id>, ...result}``, as each finishes: the scoring service
starts one sandbox per (submission, task) instead of one per result, and the engine imports the
scorer's runtime and reads the task definition once for all of them (preload.py), which saves the
start-up that dominates a result's cost.

Each result is scored in a forked child whose fd 1 is stderr (isolation.py): task code cannot
write these lines. Readers parse them with `read_result_line` / `read_batch_lines`, which check
every result (`result_checked`) before anyone stores it.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import sys
from collections.abc import Sequence
from enum import IntEnum
from pathlib import Path
from typing import Any, TextIO

from .isolation import run_isolated
from .preload import preload_task_imports, preloaded_task
from .scoring import score_instance
from .static_checks import static_validate
from .taskdef import public_task_eval
from .types import jsonable


class ExitStatus(IntEnum):
    OK = 0
    ERROR = 1  # the command could not run at all (e.g. unreadable task for public-eval)
    USAGE = 2  # argparse's own code for bad arguments


class UsageError(Exception):
    pass


def _json_arg(option: str, text: str) -> Any:
    """A JSON option value, given inline or as `@file`."""
    if text.startswith("@"):
        text = Path(text[1:]).read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{option} is not valid JSON: {exc}") from None


def _params(text: str) -> dict[str, Any]:
    value = _json_arg("--params", text)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError("--params must be a JSON object")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m scoring.engine")
    commands = parser.add_subparsers(dest="command", required=True)
    score = commands.add_parser("score", help="score one staged prediction directory")
    score.add_argument("--task-dir", type=Path, required=True)
    score.add_argument("--pred-dir", type=Path, required=True)
    score.add_argument("--ref-dir", type=Path, required=True)
    score.add_argument("--params", default="{}", help="JSON object, or @file containing one")
    score.add_argument("--prompt-level", default=None, help="b1..b4")
    score.add_argument("--judge-book", default=None,
                       help="JSON {key: {index: reply}} of recorded judge replies, or @file (see judge_calls)")
    batch = commands.add_parser("score-batch", help="score several prediction dirs against one reference")
    batch.add_argument("--task-dir", type=Path, required=True)
    batch.add_argument("--ref-dir", type=Path, required=True)
    batch.add_argument("--params", default="{}", help="JSON object, or @file containing one")
    batch.add_argument("--jobs", required=True,
                       help='JSON list of {"job": id, "pred_dir": path, "prompt_level": "b1".."b4", '
                            '"judge_book": path (optional), "ref_dir" and "params" (optional: this job\'s '
                            'instance, when the batch spans several)}, or @file')
    validate = commands.add_parser("validate", help="static task checks (§5.1)")
    validate.add_argument("--task-dir", type=Path, required=True)
    validate.add_argument("--scores-dir", type=Path, default=None)
    public = commands.add_parser("public-eval", help="print the public scoring-only task_eval")
    public.add_argument("--task-dir", type=Path, required=True)
    return parser


def score_argv(python: Sequence[str], *, task_dir: Path, pred_dir: Path, ref_dir: Path, params: str,
               prompt_level: str | None = None, judge_book: Path | None = None) -> list[str]:
    """The command line of one `score` run; `params` is a JSON object or `@file` holding one,
    `judge_book` a file of recorded judge replies.

    The one place callers (the Portal's scoring, `asibench score`, `asibench validate`) build it.
    """
    argv = [*python, "-m", "scoring.engine", "score", "--task-dir", str(task_dir), "--pred-dir", str(pred_dir),
            "--ref-dir", str(ref_dir), "--params", params]
    if prompt_level:
        argv += ["--prompt-level", prompt_level]
    if judge_book is not None:
        argv += ["--judge-book", f"@{judge_book}"]
    return argv


def score_batch_argv(python: Sequence[str], *, task_dir: Path, ref_dir: Path, params: str, jobs: str) -> list[str]:
    """The command line of one `score-batch` run: every result of one instance against one reference.

    `jobs` is a JSON list of {"job", "pred_dir", "prompt_level"} or `@file` holding one.
    """
    return [*python, "-m", "scoring.engine", "score-batch", "--task-dir", str(task_dir), "--ref-dir", str(ref_dir),
            "--params", params, "--jobs", jobs]


def _finite_number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"the scorer reported a {what} that is not a number: {value!r:.40}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not math.isfinite(number):
        raise ValueError(f"the scorer reported a non-finite {what}")
    return number


def _clamped_detail(detail: Any) -> dict[str, Any]:
    if not isinstance(detail, dict):
        raise ValueError("the scorer reported a scorer detail that is not an object")
    name = str(detail.get("scorer_name"))[:100]
    maximum = max(0.0, _finite_number(detail.get("max_score"), f"maximum for {name}"))
    return {**detail, "max_score": maximum,
            "score": min(max(_finite_number(detail.get("score"), f"score for {name}"), 0.0), maximum)}


def _without_nul(value: Any) -> Any:
    # PostgreSQL text and jsonb refuse U+0000: one in a scorer's message would fail the store.
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    return value


def result_checked(result: Any) -> dict[str, Any]:
    """An engine result fit to store: the one check every reader of result lines goes through
    (the Portal's scoring pipeline, and the CLI's local scoring, difficulty check and selfcheck).

    Strings lose NUL characters (PostgreSQL refuses them). A completed result must carry finite
    numbers, else ValueError with a reason fit for a submitter. Every detail score is clamped into
    [0, its max_score], the final score into [0, max_score], and the percentage is recomputed from
    them, so it lies in [0, 100]: a task scorer returning out-of-range values, or forging its own
    result (see isolation.py), gets at most the task's full marks and at least zero.
    """
    if not isinstance(result, dict):
        raise ValueError("the scorer's result was not a JSON object")
    result = _without_nul(result)
    if result.get("evaluation_status") != "completed" or result.get("final_score") is None:
        return result
    maximum = _finite_number(result.get("max_score"), "maximum score")
    if maximum < 0:
        raise ValueError("the scorer reported a negative maximum score")
    final = min(max(_finite_number(result.get("final_score"), "final score"), 0.0), maximum)
    checked = {**result, "final_score": final, "max_score": maximum,
               "percent": min(100.0, 100.0 * final / maximum) if maximum > 0 else 0.0}
    for key in ("gate_results", "score_results"):
        details = result.get(key) or []
        if not isinstance(details, list):
            raise ValueError(f"the scorer reported {key} that is not a list")
        checked[key] = [_clamped_detail(d) for d in details]
    return checked


class _NonFinite(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFinite(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite(text[:20])
    return value


def result_parsed(line: str) -> dict[str, Any]:
    """One result line, parsed (NaN, Infinity and overflowing numbers refused) and checked."""
    try:
        result = json.loads(line, parse_constant=_refuse_constant, parse_float=_finite_float)
    except _NonFinite as exc:
        raise ValueError(f"the scorer's result has a non-finite number ({exc})") from None
    except ValueError:
        raise ValueError("the scorer's last line was not a JSON result") from None
    if not isinstance(result, dict):
        raise ValueError("the scorer's last line was not a JSON result")
    return result_checked(result)


def read_result_line(stdout: str) -> dict[str, Any]:
    """The checked result `_emit` put on the last non-empty stdout line (see `result_checked`).

    Raises ValueError with a reason fit for a submitter when there is none or it fails the check.
    """
    lines = [line for line in stdout.strip().splitlines() if line.strip()]
    if not lines:
        raise ValueError("the scorer printed no result")
    return result_parsed(lines[-1])


def read_batch_lines(stdout: str) -> dict[str, dict[str, Any] | ValueError]:
    """{job id: its checked result, or the ValueError saying why its line failed the check}
    from score-batch output. The first line of a job counts: the engine prints one per job."""
    results: dict[str, dict[str, Any] | ValueError] = {}
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            job = json.loads(line).get("job")
        except (ValueError, AttributeError):
            continue
        if job is None or str(job) in results:
            continue
        try:
            results[str(job)] = result_parsed(line)
        except ValueError as exc:
            results[str(job)] = exc
    return results


def _jobs(text: str) -> list[dict[str, Any]]:
    value = _json_arg("--jobs", text)
    if not isinstance(value, list) or not all(
        isinstance(j, dict) and isinstance(j.get("job"), str | int) and isinstance(j.get("pred_dir"), str)
        and isinstance(j.get("ref_dir", ""), str) and isinstance(j.get("params", {}), dict)
        for j in value
    ):
        raise UsageError('--jobs must be a JSON list of {"job", "pred_dir", "prompt_level"} objects '
                         '(optionally "ref_dir": a path and "params": an object)')
    return value


def _judge_book(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    value = _json_arg("--judge-book", text)
    if not isinstance(value, dict):
        raise UsageError("--judge-book must be a JSON object")
    return value


def _score_batch(args: argparse.Namespace, stdout: TextIO) -> None:
    params = _params(args.params)
    jobs = _jobs(args.jobs)
    books = [_judge_book(f"@{job['judge_book']}") if isinstance(job.get("judge_book"), str) else None
             for job in jobs]
    with contextlib.redirect_stdout(sys.stderr):  # the result channel carries result lines only
        preload_task_imports(args.task_dir)
        task = preloaded_task(args.task_dir)
    for job, book in zip(jobs, books, strict=True):
        # score_instance never raises for task or scorer problems; anything else is this job's
        # failure alone, and the remaining jobs still get their line.
        ref_dir = Path(job["ref_dir"]) if "ref_dir" in job else args.ref_dir
        result = run_isolated(functools.partial(_score_quietly, args.task_dir, Path(job["pred_dir"]), ref_dir,
                                                job.get("params", params), job.get("prompt_level"), book, task))
        _emit({**result, "job": job["job"]}, stdout)


def _score_quietly(task_dir: Path, pred_dir: Path, ref_dir: Path, params: dict[str, Any],
                   prompt_level: str | None, judge_book: dict[str, Any] | None = None,
                   task: dict[str, Any] | None = None) -> dict[str, Any]:
    # Scorer chatter goes to stderr (in the isolated child, fd 1 is stderr already). `task` is the
    # parent's parsed definition: the child's own copy (forked), so what one result's scoring does
    # to it never reaches another's.
    with contextlib.redirect_stdout(sys.stderr):
        return score_instance(task_dir, pred_dir, ref_dir, params, prompt_level, judge_book, task)


def _emit(payload: dict[str, Any], stdout: TextIO) -> None:
    # Leading newline: custom scorers may have printed without one; the JSON stays alone on
    # the last line either way.
    stdout.write("\n" + json.dumps(jsonable(payload), allow_nan=False, sort_keys=True) + "\n")
    stdout.flush()


def main(argv: list[str] | None = None, stdout: TextIO | None = None) -> int:
    sys.dont_write_bytecode = True  # the sandbox filesystem is read-only
    stdout = stdout or sys.stdout
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "score":
            params = _params(args.params)
            book = _judge_book(args.judge_book)
            _emit(run_isolated(functools.partial(_score_quietly, args.task_dir, args.pred_dir, args.ref_dir, params,
                                                 args.prompt_level, book)), stdout)
        elif args.command == "score-batch":
            _score_batch(args, stdout)
        elif args.command == "validate":
            errors, warnings = static_validate(args.task_dir, scores_dir=args.scores_dir)
            _emit({"ok": not errors, "errors": errors, "warnings": warnings}, stdout)
        else:
            _emit(public_task_eval(args.task_dir), stdout)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return ExitStatus.USAGE
    except Exception as exc:  # one error boundary: report, never a traceback on stdout
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return ExitStatus.ERROR
    return ExitStatus.OK
