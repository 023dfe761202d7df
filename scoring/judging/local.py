"""Judges for scoring outside the Portal (the CLI's `score`, `validate`, `difficulty-check`).

The engine runs as a subprocess; while it answers `judges_pending`, the requests are put to the
endpoint the environment configures (`endpoint.JudgeEndpoint.from_environment`) and the engine
scores again with the replies. No endpoint, or one that does not answer, makes the result
`evaluation_invalid` with `failure_kind: evaluator_unavailable`, as the official local scoring does.
Replies and errors are redacted (`redaction`) and the engine, which runs task code, gets only what
it needs of them (`verdicts`), as on the Portal's workers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from scoring.engine.judge_calls import requests_expanded
from scoring.sandbox import get_backend
from scoring.sandbox.limits import AGENT_JUDGE_MAX_TIMEOUT

from .agent import agent_judge_reply
from .client import JudgeClient, JudgeUnavailable, SdkJudgeClient, output_image_reader
from .endpoint import PROVIDER_KEY_ENVS, JudgeConfigurationError, JudgeEndpoint
from .redaction import judge_redactor
from .settings import JUDGE_ROUNDS, agent_judge_max_timeout, agent_judge_settings
from .verdicts import details_completed, sandbox_reply


def unavailable(message: str) -> dict[str, Any]:
    return {"evaluation_status": "evaluation_invalid", "final_score": None, "max_score": 0.0,
            "scorer_internal_error": True, "failure_kind": "evaluator_unavailable", "error": message,
            "hard_gates_passed": False, "soft_gate_failures": 0, "gate_results": [], "score_results": []}


def endpoint_status(environ: Mapping[str, str] | None = None) -> tuple[JudgeEndpoint | None, str]:
    """(the endpoint, a sentence saying which) — or (None, why none) when judges cannot be asked here."""
    try:
        endpoint = JudgeEndpoint.from_environment(environ if environ is not None else os.environ)
    except JudgeConfigurationError as exc:
        return None, f"the judge settings are invalid: {exc}"
    if not endpoint.configured():
        keys = ", ".join(sorted({k for names in PROVIDER_KEY_ENVS.values() for k in names}))
        return None, ("no judge endpoint is configured (set ASIBENCH_JUDGE_API_BASE, ASIBENCH_JUDGE_API_KEY_ENV "
                      f"and ASIBENCH_JUDGE_API_PROTOCOL, or a provider key: {keys})")
    return endpoint, f"judges asked at {endpoint.describe()}"


def agent_judge_ceiling(environ: Mapping[str, str]) -> int:
    """The most seconds an agent judge may take here (ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT, as on the Portal); a
    task's own `timeout` never goes past it. An unusable value is reported when a judge is asked (`_agent_reply`);
    until then the default stands."""
    try:
        return agent_judge_max_timeout(environ)
    except JudgeConfigurationError:
        return AGENT_JUDGE_MAX_TIMEOUT


def _agent_reply(request: dict[str, Any], pred_dir: Path, ref_dir: Path, environ: Mapping[str, str]) -> dict[str, Any]:
    try:
        judge_settings = agent_judge_settings(environ, default_search_path=environ.get("PATH", "/usr/bin:/bin"))
    except JudgeConfigurationError as exc:
        raise JudgeUnavailable(f"the agent judge settings are invalid: {exc}") from None
    scratch = Path(tempfile.mkdtemp(prefix="asibench-agent-judge-"))
    try:
        return agent_judge_reply(request, pred_dir=pred_dir, ref_dir=ref_dir, judge_settings=judge_settings,
                                 environ=environ, backend=get_backend("bwrap"), scratch=scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def answer_requests(requests: list[dict[str, Any]], *, client: JudgeClient, pred_dir: Path, ref_dir: Path,
                    max_in_flight: int = 4, environ: Mapping[str, str] | None = None,
                    ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The replies to `requests` {key: {index: reply}}, redacted, and the reasons (redacted too) of those
    that failed."""
    environ = environ if environ is not None else os.environ
    redact = judge_redactor(environ)
    replies: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    chat = [r for r in requests if r.get("kind") != "agent"]
    read = output_image_reader(pred_dir, ref_dir)

    def ask(request: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | str]:
        try:
            return request, client.complete(request, read).record()
        except JudgeUnavailable as exc:
            return request, str(exc)

    with ThreadPoolExecutor(max_workers=max(1, max_in_flight)) as pool:
        answers = list(pool.map(ask, chat))
    for request in requests:
        if request.get("kind") == "agent":
            try:
                answers.append((request, _agent_reply(request, pred_dir, ref_dir, environ)))
            except JudgeUnavailable as exc:
                answers.append((request, str(exc)))
    for request, answer in answers:
        if isinstance(answer, str):
            errors.append(redact.text(f"{request.get('scorer')} ({request.get('model')}): {answer}"))
        else:
            replies.setdefault(str(request["key"]), {})[str(request["index"])] = redact.value(answer)
    return replies, errors


def score_with_judges(run_engine: Callable[[dict[str, Any] | None], dict[str, Any]], *, pred_dir: Path,
                      ref_dir: Path, client: JudgeClient | None = None, environ: Mapping[str, str] | None = None,
                      ) -> dict[str, Any]:
    """`run_engine(book)` until its result no longer waits for judges (at most JUDGE_ROUNDS rounds of asking).
    The book holds what the engine needs of each reply (`verdicts.sandbox_reply`); the judges' raw
    replies and reasonings are put into the result afterwards."""
    book: dict[str, Any] = {"replies": {}}
    recorded: dict[str, dict[str, Any]] = {}
    result = run_engine(None)
    for _ in range(JUDGE_ROUNDS):
        if result.get("evaluation_status") != "judges_pending":
            return details_completed(result, recorded)
        if client is None:
            endpoint, why = endpoint_status(environ)
            if endpoint is None:
                return unavailable(f"the task has judge scorers, and {why}")
            client = SdkJudgeClient(endpoint)
        requests = requests_expanded(list(result.get("judge_requests") or []))
        replies, errors = answer_requests(requests, client=client, pred_dir=pred_dir, ref_dir=ref_dir,
                                          environ=environ)
        if errors:
            return unavailable("judge unavailable: " + "; ".join(errors[:3]))
        for request in requests:
            reply = replies.get(str(request["key"]), {}).get(str(request["index"]))
            if reply is not None:
                recorded[f"{request['key']}:{request['index']}"] = reply
                book["replies"].setdefault(str(request["key"]), {})[str(request["index"])] = sandbox_reply(
                    request, reply)
        result = run_engine(book)
    if result.get("evaluation_status") == "judges_pending":
        return unavailable(f"the judges still asked for more after {JUDGE_ROUNDS} rounds")
    return details_completed(result, recorded)
