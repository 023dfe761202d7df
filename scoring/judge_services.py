"""The worker's side of model judges: keep what the sandbox asked, ask the model, keep every reply.

The scoring sandbox has no network and no secrets, so a result with judges comes back
`judges_pending` with its requests (`scoring.engine.judge_calls`). `judge_requests_record` stores
one `JudgeCall` per request (a rescore takes the replies earlier scorings of the run recorded,
unless the maintainer asked to re-judge); `judge_calls_answer` asks the model for the pending
ones, at most JUDGE_MAX_IN_FLIGHT in flight across all workers and within the run's and the day's
token budgets; `judge_books` hands the replies back to the engine. A call the endpoint does not
answer waits (the run page says "waiting for evaluator") and is tried again on a schedule by the
sweep (`judge_waiting_due`), then fails with the reason; the result fails with it, never as a
silent zero, and the rest of the run is scored as usual.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from scoring import metrics
from scoring.judging.agent import agent_judge_reply
from scoring.judging.client import JudgeClient, JudgeReply, JudgeUnavailable, SdkJudgeClient, output_image_reader
from scoring.judging.endpoint import JudgeEndpoint
from scoring.judging.redaction import Redactor, judge_redactor
from scoring.judging.verdicts import sandbox_reply
from scoring.models import JudgeCall, JudgeTokenLedger, ScoringRun
from scoring.sandbox import get_backend
from scoring.sandbox.limits import AGENT_JUDGE_MIN_MEMORY_BYTES

logger = logging.getLogger(__name__)
IMAGE_TOKENS = 1_500  # what one image is counted as before the reply says what it cost
CLAIM_POLL_SECONDS = 0.2


def judge_endpoint() -> JudgeEndpoint:
    """The operator's endpoint; keys are read from the process environment at each call."""
    return JudgeEndpoint(api_base=settings.JUDGE_API_BASE or None, api_key_env=settings.JUDGE_API_KEY_ENV or None,
                         api_protocol=settings.JUDGE_API_PROTOCOL or None, environ=os.environ)


@lru_cache(maxsize=4)
def _client_for(base: str, key_env: str, protocol: str, timeout: int, prices: str) -> SdkJudgeClient:
    return SdkJudgeClient(judge_endpoint(), timeout=float(timeout), prices=json.loads(prices))


def output_redactor() -> Redactor:
    """What every judge's output passes before it is stored, logged or handed to a sandbox: the
    secrets this worker holds (its environment, Django's secret key, the database password) and the
    usual key shapes are replaced (`scoring.judging.redaction`)."""
    database = settings.DATABASES.get("default") or {}
    return judge_redactor(os.environ, extra=[settings.SECRET_KEY, str(database.get("PASSWORD") or "")])


def judge_client() -> JudgeClient:
    return _client_for(settings.JUDGE_API_BASE, settings.JUDGE_API_KEY_ENV, settings.JUDGE_API_PROTOCOL,
                       settings.JUDGE_TIMEOUT_SECONDS, json.dumps(settings.JUDGE_PRICES, sort_keys=True))


def _stale_after() -> timedelta:
    """How long an in-flight call may stay claimed before its worker is presumed dead."""
    return timedelta(seconds=settings.JUDGE_TIMEOUT_SECONDS * 3 + 10 + 600)


# ---------------------------------------------------------------- requests and books
def judge_requests_record(*, run: ScoringRun, entry_id: int, requests: list[dict[str, Any]]) -> int:
    """One JudgeCall per request (existing ones are kept); returns how many are new. Unless the run
    re-judges, a request an earlier scoring of this result already had answered is answered again
    with that reply (recorded as reused), so a rescore replays the judges instead of asking anew."""
    earlier: dict[tuple[str, int], JudgeCall] = {}
    if not run.rejudge:
        for call in (JudgeCall.objects.filter(entry_id=entry_id, status=JudgeCall.Status.ANSWERED,
                                              scoring_run__submission_id=run.submission_id)
                     .exclude(scoring_run=run).order_by("scoring_run__number")):
            earlier[(call.key, call.index)] = call.reused_from or call
    now = timezone.now()
    rows = []
    for request in requests:
        key, index = str(request.get("key")), int(request.get("index") or 0)
        prior = earlier.get((key, index))
        rows.append(JudgeCall(
            scoring_run=run, entry_id=entry_id, key=key, index=index, kind=str(request.get("kind") or "chat")[:10],
            scorer=str(request.get("scorer") or "")[:120], model=str(request.get("model") or "")[:200],
            request=request, next_attempt_at=now + timedelta(seconds=settings.JUDGE_RETRY_SECONDS),
            **({"status": JudgeCall.Status.ANSWERED, "reply": prior.reply, "resolved_model": prior.resolved_model,
                "reused_from": prior, "answered_at": now} if prior else {})))
    before = JudgeCall.objects.filter(scoring_run=run, entry_id=entry_id).count()
    JudgeCall.objects.bulk_create(rows, ignore_conflicts=True)
    return JudgeCall.objects.filter(scoring_run=run, entry_id=entry_id).count() - before


def judge_books(*, scoring_run_id: int, entry_ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """{entry id: {"replies": {key: {index: entry}}}}: what the engine may replay for each result, each
    reply as `scoring.judging.verdicts.sandbox_reply` makes it (scores, never a judge's raw output)."""
    books: dict[int, dict[str, Any]] = {}
    redact = output_redactor()
    answered = JudgeCall.objects.filter(scoring_run_id=scoring_run_id, entry_id__in=list(entry_ids),
                                        status=JudgeCall.Status.ANSWERED)
    for entry_id, key, index, request, reply in answered.values_list("entry_id", "key", "index", "request", "reply"):
        # Redacted again: rows recorded before redaction existed are replayed by a rescore.
        entry = sandbox_reply(request or {}, redact.value(reply or {}))
        books.setdefault(entry_id, {"replies": {}})["replies"].setdefault(key, {})[str(index)] = entry
    return books


def judge_replies(*, scoring_run_id: int, entry_id: int) -> dict[str, dict[str, Any]]:
    """{"<key>:<index>": recorded reply} of this result's answered calls: what a stored score shows of
    its judges (`scoring.judging.verdicts.details_completed`)."""
    redact = output_redactor()
    return {f"{key}:{index}": redact.value(reply or {}) for key, index, reply in
            JudgeCall.objects.filter(scoring_run_id=scoring_run_id, entry_id=entry_id,
                                     status=JudgeCall.Status.ANSWERED).values_list("key", "index", "reply")}


def judge_all_answered(*, scoring_run_id: int, entry_id: int) -> bool:
    return not JudgeCall.objects.filter(scoring_run_id=scoring_run_id, entry_id=entry_id).exclude(
        status=JudgeCall.Status.ANSWERED).exists()


def judge_failure(*, scoring_run_id: int, entry_id: int) -> JudgeCall | None:
    """The first call of this result that was given up on, if any."""
    return (JudgeCall.objects.filter(scoring_run_id=scoring_run_id, entry_id=entry_id, status=JudgeCall.Status.FAILED)
            .order_by("id").first())


def judge_calls_summary(*, scoring_run_id: int, entry_id: int) -> list[dict[str, Any]]:
    """What a stored score records of its judges: model, tokens, cost, timing, reuse, per call."""
    return [{"key": c.key, "index": c.index, "scorer": c.scorer, "model": c.model,
             "resolved_model": c.resolved_model, "input_tokens": c.input_tokens, "output_tokens": c.output_tokens,
             "cost_usd": c.cost_usd, "seconds": c.seconds, "attempts": c.attempts,
             "reused_from_scoring": c.reused_from.scoring_run.number if c.reused_from else None}
            for c in JudgeCall.objects.filter(scoring_run_id=scoring_run_id, entry_id=entry_id,
                                              status=JudgeCall.Status.ANSWERED)
            .select_related("reused_from__scoring_run").order_by("key", "index")]


# ---------------------------------------------------------------- claims and budgets
def _claim(candidates: list[int], wanted: int, now: datetime) -> list[JudgeCall]:
    """Mark up to `wanted` of these pending calls in flight, never more than the cap across workers:
    the claim holds the in-flight row's lock, so two workers never both take the last slot."""
    if wanted <= 0 or not candidates:
        return []
    with transaction.atomic():
        JudgeTokenLedger.objects.select_for_update().get_or_create(scope=JudgeTokenLedger.IN_FLIGHT_LOCK)
        busy = JudgeCall.objects.filter(status=JudgeCall.Status.IN_FLIGHT, claimed_at__gte=now - _stale_after()).count()
        free = min(settings.JUDGE_MAX_IN_FLIGHT - busy, wanted)
        if free <= 0:
            return []
        ids = list(JudgeCall.objects.filter(id__in=candidates, status=JudgeCall.Status.PENDING)
                   .order_by("id").values_list("id", flat=True)[:free])
        JudgeCall.objects.filter(id__in=ids, status=JudgeCall.Status.PENDING).update(
            status=JudgeCall.Status.IN_FLIGHT, claimed_at=now)
    return list(JudgeCall.objects.filter(id__in=ids, status=JudgeCall.Status.IN_FLIGHT).order_by("id"))


def _ledger_row(scope: str) -> None:
    if not JudgeTokenLedger.objects.filter(scope=scope).exists():
        try:
            with transaction.atomic():
                JudgeTokenLedger.objects.create(scope=scope)
        except IntegrityError:  # another worker made it first
            pass


@dataclass(frozen=True)
class _Budget:
    scope: str  # its JudgeTokenLedger row
    limit: int
    refills: bool  # a new day refills it: a call it refuses waits; else the call fails
    what: str
    setting: str
    per: str = ""  # what the limit is counted per, for the reason


def _owner_id(scoring_run_id: int) -> Any:
    return ScoringRun.objects.filter(id=scoring_run_id).values_list("submission__owner_id", flat=True).first()


def next_budget_day(now: datetime) -> datetime:
    """When the day's budgets refill: the next 00:00 UTC."""
    return (now.astimezone(UTC) + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)


def _budgets(call: JudgeCall, now: datetime) -> list[_Budget]:
    """The budgets a call is reserved from: its scoring run's, its owner's daily share, the site's day."""
    day = f"{now.astimezone(UTC):%Y-%m-%d}"
    return [
        _Budget(f"run:{call.scoring_run_id}", settings.JUDGE_RUN_TOKEN_BUDGET, False,
                "this scoring run's judge token budget", "ASIBENCH_JUDGE_RUN_TOKENS"),
        _Budget(f"user:{_owner_id(call.scoring_run_id)}:{day}", settings.JUDGE_USER_DAILY_TOKEN_BUDGET, True,
                "this account's daily share of judge tokens", "ASIBENCH_JUDGE_USER_DAILY_TOKENS", " a day"),
        _Budget(f"day:{day}", settings.JUDGE_DAILY_TOKEN_BUDGET, True,
                "today's judge token budget", "ASIBENCH_JUDGE_DAILY_TOKENS", " for all accounts"),
    ]


class BudgetRefused(Exception):
    """`final`: the budget will not refill (the run's), or the call is larger than a whole budget."""

    def __init__(self, reason: str, *, final: bool) -> None:
        super().__init__(reason)
        self.final = final


def estimated_tokens(call: JudgeCall) -> int:
    """What a call is reserved at before it is made: its prompt (4 characters a token, images at a
    flat rate) plus the most it may answer; an agent judge at the configured estimate."""
    if call.kind == "agent":
        return settings.JUDGE_AGENT_TOKEN_ESTIMATE
    request = call.request or {}
    images = 0
    for message in request.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            images += sum(1 for part in content if isinstance(part, dict) and part.get("type") == "image_file")
    text = json.dumps(request.get("messages") or [])
    return len(text) // 4 + images * IMAGE_TOKENS + int(request.get("max_tokens") or 1024)


def _reserve(call: JudgeCall, tokens: int, now: datetime) -> None:
    """Take `tokens` from each of the call's budgets, or from none and raise BudgetRefused: final for the
    run's budget and for a call no whole budget could hold; else the call waits for the budget."""
    budgets = _budgets(call, now)
    for budget in budgets:
        if tokens > budget.limit:
            raise BudgetRefused(f"one judge call needs about {tokens} tokens, more than all of {budget.what} "
                                f"({budget.limit} tokens{budget.per}, {budget.setting})", final=True)
    for budget in budgets:
        _ledger_row(budget.scope)
    with transaction.atomic():
        for budget in budgets:
            if not JudgeTokenLedger.objects.filter(scope=budget.scope, tokens__lte=budget.limit - tokens).update(
                    tokens=F("tokens") + tokens):
                transaction.set_rollback(True)
                raise BudgetRefused(f"{budget.what} ({budget.limit} tokens{budget.per}, {budget.setting}) is used up",
                                    final=not budget.refills)


def _budget_room(call: JudgeCall, now: datetime) -> bool:
    """Whether the budgets that refused this call would take it now (the operator raised one, or
    reservations settled lower): read only, the reservation itself decides."""
    tokens = estimated_tokens(call)
    for budget in _budgets(call, now):
        used = JudgeTokenLedger.objects.filter(scope=budget.scope).values_list("tokens", flat=True).first() or 0
        if budget.refills and used + tokens > budget.limit:
            return False
    return True


def _settle(call: JudgeCall, reserved: int, spent: int, now: datetime) -> None:
    if spent != reserved:
        JudgeTokenLedger.objects.filter(scope__in=[b.scope for b in _budgets(call, now)]).update(
            tokens=F("tokens") + (spent - reserved))


def _answered(call: JudgeCall, reply: dict[str, Any], *, resolved: str, tokens_in: int, tokens_out: int,
              cost: float | None, seconds: float | None) -> None:
    """Record the reply, redacted: of every judge kind, this is where a reply is stored."""
    JudgeCall.objects.filter(id=call.id, status=JudgeCall.Status.IN_FLIGHT).update(
        status=JudgeCall.Status.ANSWERED, reply=output_redactor().value(reply), resolved_model=resolved[:200],
        input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost, seconds=seconds,
        attempts=F("attempts") + 1, answered_at=timezone.now(), last_error="", waiting_for_budget=False)
    metrics.judge_answered(kind=call.kind, tokens_in=tokens_in, tokens_out=tokens_out)


def _refused(call: JudgeCall, refusal: BudgetRefused, now: datetime) -> None:
    """A call a budget refused: failed with the reason if no wait can help, else it waits for the budget
    (from the next day's start, or sooner if the sweep finds room) without using up a round."""
    if refusal.final:
        _unanswered(call, str(refusal), final=True, now=now)
        return
    JudgeCall.objects.filter(id=call.id, status=JudgeCall.Status.IN_FLIGHT).update(
        status=JudgeCall.Status.PENDING, waiting_for_budget=True, last_error=str(refusal)[:2000],
        next_attempt_at=next_budget_day(now))
    logger.info("judge call %s (%s, %s) waits for budget: %s", call.id, call.scorer, call.model, refusal)


def _unanswered(call: JudgeCall, reason: str, *, final: bool, now: datetime) -> None:
    """Wait for the next round (doubling from JUDGE_RETRY_SECONDS), or fail after JUDGE_MAX_ROUNDS. The
    reason is redacted before it is stored or logged (an error can quote what the judge printed)."""
    reason = output_redactor().text(reason)
    attempts = call.attempts + 1
    give_up = final or attempts >= settings.JUDGE_MAX_ROUNDS
    delay = settings.JUDGE_RETRY_SECONDS * 2 ** (attempts - 1)
    JudgeCall.objects.filter(id=call.id, status=JudgeCall.Status.IN_FLIGHT).update(
        status=JudgeCall.Status.FAILED if give_up else JudgeCall.Status.PENDING, attempts=attempts,
        last_error=reason[:2000], next_attempt_at=None if give_up else now + timedelta(seconds=delay),
        waiting_for_budget=False)
    metrics.judge_unanswered(kind=call.kind)
    logger.warning("judge call %s (%s, %s) %s: %s", call.id, call.scorer, call.model,
                   "failed for good" if give_up else f"waits {delay} s", reason)


# ---------------------------------------------------------------- asking
def _agent_reply(call: JudgeCall, pred_dir: Path, ref_dir: Path, scratch: Path) -> dict[str, Any]:
    return agent_judge_reply(call.request or {}, pred_dir=pred_dir, ref_dir=ref_dir,
                             judge_settings=settings.AGENT_JUDGE, environ=os.environ, backend=get_backend("bwrap"),
                             scratch=scratch,
                             memory_bytes=max(settings.SCORING_MEMORY_BYTES, AGENT_JUDGE_MIN_MEMORY_BYTES))


def judge_calls_answer(*, run: ScoringRun, staged: dict[int, tuple[Path, Path]], scratch: Path,
                       client: JudgeClient | None = None) -> bool:
    """Ask the model for every pending call of these results {entry id: (pred dir, ref dir)} in this
    run. Chat calls run in parallel up to the cap (waiting for a free slot when other workers hold
    them); agent judges one at a time (each is a sandbox of its own). True when all are answered."""
    client = client or judge_client()
    calls = JudgeCall.objects.filter(scoring_run=run, entry_id__in=list(staged), status=JudgeCall.Status.PENDING)
    chat = list(calls.exclude(kind="agent").order_by("id").values_list("id", flat=True))
    agents = list(calls.filter(kind="agent").order_by("id").values_list("id", flat=True))
    deadline = time.monotonic() + settings.JUDGE_TIMEOUT_SECONDS * 6 + 60
    running: dict[Future[JudgeReply], tuple[JudgeCall, int]] = {}
    with ThreadPoolExecutor(max_workers=settings.JUDGE_MAX_IN_FLIGHT, thread_name_prefix="judge") as pool:
        while chat or running:
            now = timezone.now()
            for call in _claim(chat, settings.JUDGE_MAX_IN_FLIGHT - len(running), now):
                chat.remove(call.id)
                reserved = estimated_tokens(call)
                try:
                    _reserve(call, reserved, now)
                except BudgetRefused as exc:
                    _refused(call, exc, now)
                    continue
                pred, ref = staged[call.entry_id]
                running[pool.submit(client.complete, call.request, output_image_reader(pred, ref))] = (call, reserved)
            if not running:
                chat = list(JudgeCall.objects.filter(id__in=chat, status=JudgeCall.Status.PENDING)
                            .values_list("id", flat=True))
                if not chat or time.monotonic() > deadline:
                    break  # another worker took them, or the cap stayed full (the sweep sends them again)
                time.sleep(CLAIM_POLL_SECONDS)
                continue
            done, _ = wait(list(running), timeout=CLAIM_POLL_SECONDS * 5, return_when=FIRST_COMPLETED)
            for future in done:
                call, reserved = running.pop(future)
                now = timezone.now()
                try:
                    reply = future.result()
                except JudgeUnavailable as exc:
                    _settle(call, reserved, 0, now)
                    _unanswered(call, str(exc), final=False, now=now)
                    continue
                except Exception as exc:  # a bug here must not leave the call in flight
                    logger.exception("judge call %s raised", call.id)
                    _settle(call, reserved, 0, now)
                    _unanswered(call, f"{type(exc).__name__}: {exc}", final=False, now=now)
                    continue
                _settle(call, reserved, reply.input_tokens + reply.output_tokens, now)
                _answered(call, reply.record(), resolved=reply.model, tokens_in=reply.input_tokens,
                          tokens_out=reply.output_tokens, cost=reply.cost_usd, seconds=reply.seconds)
    for call_id in agents:
        now = timezone.now()
        claimed = _claim([call_id], 1, now)
        while not claimed and time.monotonic() < deadline:
            time.sleep(CLAIM_POLL_SECONDS)
            claimed = _claim([call_id], 1, timezone.now())
        if not claimed:
            break
        call = claimed[0]
        reserved = settings.JUDGE_AGENT_TOKEN_ESTIMATE
        try:
            _reserve(call, reserved, now)
        except BudgetRefused as exc:
            _refused(call, exc, now)
            continue
        started = time.monotonic()
        try:
            record = _agent_reply(call, *staged[call.entry_id], scratch)
        except JudgeUnavailable as exc:
            _settle(call, reserved, 0, timezone.now())
            _unanswered(call, str(exc), final=False, now=timezone.now())
            continue
        _answered(call, record, resolved=f"{call.request.get('agent')}/{call.model}", tokens_in=0, tokens_out=0,
                  cost=None, seconds=round(time.monotonic() - started, 3))
    return not JudgeCall.objects.filter(scoring_run=run, entry_id__in=list(staged)).exclude(
        status=JudgeCall.Status.ANSWERED).exists()


# ---------------------------------------------------------------- the sweep
def judge_waiting_due(*, now: datetime | None = None) -> list[tuple[int, str]]:
    """(scoring run, instance) pairs whose waiting judge calls are due for another round; each is
    claimed (its next attempt moved on by JUDGE_RETRY_SECONDS) so one sweep sends it once. Calls left
    in flight by a worker that died are put back first."""
    now = now or timezone.now()
    JudgeCall.objects.filter(status=JudgeCall.Status.IN_FLIGHT, claimed_at__lt=now - _stale_after()).update(
        status=JudgeCall.Status.PENDING, next_attempt_at=now)
    # Calls waiting for a budget are due at the next day's start, or as soon as it has room again.
    budget_waits = (JudgeCall.objects.filter(status=JudgeCall.Status.PENDING, waiting_for_budget=True,
                                             next_attempt_at__gt=now, scoring_run__status=ScoringRun.Status.RUNNING)
                    .order_by("scoring_run_id", "entry__instance_id", "id"))
    checked: set[tuple[int, str]] = set()
    for call in budget_waits.select_related("entry"):
        group = (call.scoring_run_id, call.entry.instance_id)
        if group not in checked:
            checked.add(group)
            if _budget_room(call, now):
                budget_waits.filter(scoring_run_id=group[0], entry__instance_id=group[1]).update(next_attempt_at=now)
    due = (JudgeCall.objects.filter(status=JudgeCall.Status.PENDING, next_attempt_at__lte=now,
                                    scoring_run__status=ScoringRun.Status.RUNNING)
           .values_list("scoring_run_id", "entry__instance_id").distinct())
    sent = []
    for run_id, instance_id in sorted(set(due)):
        if JudgeCall.objects.filter(scoring_run_id=run_id, entry__instance_id=instance_id,
                                    status=JudgeCall.Status.PENDING, next_attempt_at__lte=now).update(
                next_attempt_at=now + timedelta(seconds=settings.JUDGE_RETRY_SECONDS)):
            sent.append((run_id, instance_id))
    return sent


def judge_waiting(*, scoring_run_id: int) -> dict[str, Any] | None:
    """What the run page says while results wait for a judge: for an endpoint that did not answer, how
    many results, the next try and the last error; for a budget (`budget`), how many results, why, and
    when the day's budgets refill at the latest. None when nothing waits for either."""
    waiting = JudgeCall.objects.filter(scoring_run_id=scoring_run_id,
                                       status__in=[JudgeCall.Status.PENDING, JudgeCall.Status.IN_FLIGHT])
    for_endpoint = waiting.filter(waiting_for_budget=False)
    retrying = for_endpoint.filter(attempts__gt=0)
    for_budget = waiting.filter(waiting_for_budget=True)
    if not retrying.exists() and not for_budget.exists():
        return None
    latest = retrying.order_by("-next_attempt_at").first()
    refused = for_budget.order_by("-id").first()
    return {"results": for_endpoint.values("entry_id").distinct().count() if latest else 0,
            "calls": for_endpoint.count() if latest else 0,
            "next_attempt_at": min((c for c in retrying.values_list("next_attempt_at", flat=True) if c),
                                   default=None),
            "attempts": latest.attempts if latest else 0, "last_error": latest.last_error if latest else "",
            "budget": {"results": for_budget.values("entry_id").distinct().count(), "calls": for_budget.count(),
                       "reason": refused.last_error, "resumes_at": refused.next_attempt_at} if refused else None}
