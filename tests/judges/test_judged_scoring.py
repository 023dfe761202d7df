"""The worker's judge calls, through the real pipeline (bubblewrap sandbox, PostgreSQL) and a local model
endpoint: every reply recorded with its tokens, the cap on calls in flight, results that wait for an
endpoint that does not answer and then fail with the reason, the token budgets, and rescoring that
replays the recorded replies unless the maintainer asks to re-judge."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client import REGISTRY

from portal.submissions import scoring_runs
from portal.submissions import services as submissions
from portal.submissions.models import Submission
from portal.submissions.reaper import stuck_runs_reap
from scoring import judge_services
from scoring.judging.client import SdkJudgeClient
from scoring.models import InstanceScore, JudgeCall, JudgeTokenLedger, ScoringRun
from tests.judge_endpoint import JudgeEndpoint
from tests.judges.support import INSTANCE, KEY_ENV, LEVELS, SECRET, endpoint_env, restore_catalog, write_results
from tests.support import bundle_of

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def catalog(judged_catalog):  # noqa: ANN201
    restore_catalog(judged_catalog["rows"])
    return judged_catalog


@pytest.fixture
def endpoint(settings, monkeypatch):  # noqa: ANN201
    """The local endpoint as the operator's judge endpoint; the client does not sleep between attempts."""
    with JudgeEndpoint(latency=0.05) as server:
        env = endpoint_env(server)
        settings.JUDGE_API_BASE = env["ASIBENCH_JUDGE_API_BASE"]
        settings.JUDGE_API_KEY_ENV, settings.JUDGE_API_PROTOCOL = KEY_ENV, "openai"
        monkeypatch.setenv(KEY_ENV, SECRET)
        client = SdkJudgeClient(judge_services.judge_endpoint(), timeout=5, sleep=lambda seconds: None)
        monkeypatch.setattr(judge_services, "judge_client", lambda: client)
        yield server


def queued_run(persona, catalog, tmp_path, levels=None) -> Submission:  # noqa: ANN001
    """A run uploaded through intake and put in the queue, without a broker message (scored here)."""
    results = write_results(tmp_path / "results", catalog["reference"], catalog["params"], levels)
    archive = bundle_of(results, tmp_path / "bundle.tar.gz")
    with archive.open("rb") as stream:
        intake = submissions.submission_intake(user=persona.user, stream=stream, content_length=None,
                                               filename=archive.name)
    Submission.objects.filter(id=intake.submission.id).update(status=Submission.Status.QUEUED,
                                                               confirmed_at=timezone.now())
    return Submission.objects.get(id=intake.submission.id)


def score(submission: Submission, rejudge: bool = False) -> ScoringRun:
    Submission.objects.filter(id=submission.id).update(status=Submission.Status.QUEUED)
    run = scoring_runs.scoring_run_start(submission_id=str(submission.id), rejudge=rejudge)
    assert run is not None
    scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=INSTANCE)
    scoring_runs.scoring_run_finalize(scoring_run_id=run.id)
    return ScoringRun.objects.get(id=run.id)


def by_level(run: ScoringRun) -> dict[str, InstanceScore]:
    return {s.entry.prompt_level: s for s in InstanceScore.objects.filter(scoring_run=run).select_related("entry")}


def judge_metric(name: str, **labels: str) -> float:
    """A judge counter of scoring/metrics.py in this process (the worker serves the same ones)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_every_reply_is_recorded_with_its_model_tokens_and_parsed_score(catalog, endpoint, submitter, tmp_path,
                                                                        settings):
    settings.JUDGE_MAX_IN_FLIGHT = 3
    endpoint.latency = 0.3
    answered = judge_metric("asibench_judge_calls_total", kind="chat", status="answered")
    tokens_in = judge_metric("asibench_judge_tokens_total", direction="input")
    tokens_out = judge_metric("asibench_judge_tokens_total", direction="output")
    scored = judge_metric("asibench_scoring_result_seconds_count", outcome="scored")
    run = score(queued_run(submitter, catalog, tmp_path))
    assert run.status == "complete"
    scores = by_level(run)
    assert set(scores) == set(LEVELS) and all(s.outcome == "scored" for s in scores.values())
    b1 = scores["b1"].result
    assert b1["judged"] is True
    llm = next(d for d in b1["score_results"] if d["scorer_name"] == "llm_judge")
    assert sorted(llm["details"]["individual_scores"]) == [7.0, 8.0, 9.0] and llm["score"] == 20.0
    assert llm["details"]["model"] == "google/gemini-3.5-flash"
    assert all(r.startswith('{"score"') for r in llm["details"]["raw_responses"])
    assert llm["details"]["judge_cost"]["input_tokens"] > 0 and llm["details"]["judge_cost"]["num_invocations"] == 3
    calls = JudgeCall.objects.filter(scoring_run=run)
    assert calls.count() == 4 * 7 and set(calls.values_list("status", flat=True)) == {"answered"}
    assert set(calls.values_list("resolved_model", flat=True)) == {"openai/google/gemini-3.5-flash",
                                                                   "openai/gpt-5.4"}
    assert all(c.input_tokens > 0 and c.output_tokens > 0 for c in calls)
    # Prometheus: every call, its tokens, every scored result.
    assert judge_metric("asibench_judge_calls_total", kind="chat", status="answered") == answered + 4 * 7
    assert judge_metric("asibench_judge_tokens_total", direction="input") == tokens_in + sum(
        calls.values_list("input_tokens", flat=True))
    assert judge_metric("asibench_judge_tokens_total", direction="output") == tokens_out + sum(
        calls.values_list("output_tokens", flat=True))
    assert judge_metric("asibench_scoring_result_seconds_count", outcome="scored") == scored + 4
    summary = b1["judge_calls"]
    assert len(summary) == 7 and {c["scorer"] for c in summary} == {"llm_judge", "multimodal:vlm_judge",
                                                                     "custom_scorer"}
    truncated = next(d for d in scores["b4"].result["score_results"] if d["scorer_name"] == "llm_judge")
    assert truncated["details"]["truncated_inputs"][0]["kept_chars"] == 2000
    # The prediction went to the judge as delimited data, the rubric in the system message.
    llm_bodies = [r["body"] for r in endpoint.requests if r["body"]["model"] == "google/gemini-3.5-flash"]
    system, user = llm_bodies[0]["messages"]
    assert "absorption peak" in system["content"] and "<<<BEGIN AGENT_OUTPUT" in user["content"]
    assert 2 <= endpoint.max_in_flight <= 3


def test_an_endpoint_that_does_not_answer_makes_results_wait_then_fail_with_the_reason(
        catalog, endpoint, submitter, tmp_path, settings, client):
    settings.JUDGE_MAX_ROUNDS = 2
    levels = {"b1": {**LEVELS["b1"], "report": "500"}, "b2": LEVELS["b2"]}
    submission = queued_run(submitter, catalog, tmp_path, levels)
    unanswered = judge_metric("asibench_judge_calls_total", kind="chat", status="unanswered")
    run = score(submission)
    assert run.status == "running" and set(by_level(run)) == {"b2"}
    assert judge_metric("asibench_judge_calls_total", kind="chat", status="unanswered") == unanswered + 4
    waiting = JudgeCall.objects.filter(scoring_run=run, status="pending")
    assert waiting.count() == 4  # b1's three llm_judge calls and its custom scorer's call
    assert all(c.attempts == 1 and "InternalServerError" in c.last_error and c.next_attempt_at for c in waiting)
    client.force_login(submitter.user)
    page = " ".join(client.get(f"/submit/submissions/{submission.id}").content.decode().split())
    assert "Waiting for evaluator:</strong> 1 result needs a judge model that has not answered (tried 1 time;" in page
    assert "InternalServerError" not in page  # the owner is not shown the endpoint's errors
    body = client.get(f"/api/v1/submissions/{submission.id}").json()
    assert body["status"] == "scoring" and body["judges_waiting"]["results"] == 1

    assert judge_services.judge_waiting_due(now=timezone.now()) == []
    due = judge_services.judge_waiting_due(now=timezone.now() + timedelta(hours=1))
    assert due == [(run.id, INSTANCE)]
    scoring_runs.run_instances_score(scoring_run_id=run.id, instance_id=INSTANCE)
    assert scoring_runs.scoring_run_finalize(scoring_run_id=run.id)
    scores = by_level(ScoringRun.objects.get(id=run.id))
    assert (scores["b1"].outcome, scores["b1"].percent) == ("error", 0.0)
    assert "evaluator unavailable: the llm_judge judge (google/gemini-3.5-flash) gave no reply after 2 round(s)" \
        in scores["b1"].reason and "InternalServerError" in scores["b1"].reason
    assert scores["b2"].outcome == "scored" and scores["b2"].percent > 0
    assert Submission.objects.get(id=submission.id).status == "scored"


def test_the_run_budget_stops_judge_calls_with_the_reason_and_the_day_budget_makes_them_wait(
        catalog, endpoint, submitter, tmp_path, settings, client):
    settings.JUDGE_RUN_TOKEN_BUDGET = 100
    run = score(queued_run(submitter, catalog, tmp_path, {"b1": LEVELS["b1"]}))
    b1 = by_level(run)["b1"]
    assert b1.outcome == "error" and "ASIBENCH_JUDGE_RUN_TOKENS" in b1.reason
    assert "this scoring run's judge token budget (100 tokens" in b1.reason
    assert endpoint.requests == []

    # The day's budget refills: a call it refuses waits for it, never failed for it (even when a single
    # round would fail an unanswered call), and the run page says why.
    settings.JUDGE_RUN_TOKEN_BUDGET = 10_000_000
    settings.JUDGE_DAILY_TOKEN_BUDGET = 100_000
    settings.JUDGE_MAX_ROUNDS = 1
    JudgeTokenLedger.objects.create(scope=f"day:{timezone.now():%Y-%m-%d}", tokens=99_950)  # others' runs today
    again = score(Submission.objects.get(id=run.submission_id), rejudge=True)
    assert again.status == "running" and not by_level(again)
    assert not JudgeCall.objects.filter(scoring_run=again, status="failed").exists()
    pending = JudgeCall.objects.filter(scoring_run=again, status="pending")
    assert pending.exists() and all("today's judge token budget (100000 tokens for all accounts" in c.last_error
                                    for c in pending)
    assert all(c.attempts == 0 and c.waiting_for_budget for c in pending)
    assert endpoint.requests == []
    client.force_login(submitter.user)
    page = " ".join(client.get(f"/submit/submissions/{run.submission_id}").content.decode().split())
    assert "Waiting for judge budget:</strong> 1 result waits because today&#x27;s judge token budget" in page
    assert "Waiting for evaluator" not in page

    # Waiting for a budget is not being stuck: the reaper leaves the run alone, however long it waits.
    ScoringRun.objects.filter(id=again.id).update(created_at=timezone.now() - timedelta(days=1))
    assert stuck_runs_reap()["requeued"] == 0 and ScoringRun.objects.get(id=again.id).status == "running"

    # Nothing is due before the budget has room; once the operator raises it, the sweep sends them.
    assert judge_services.judge_waiting_due(now=timezone.now()) == []
    settings.JUDGE_DAILY_TOKEN_BUDGET = 100_000_000
    assert judge_services.judge_waiting_due(now=timezone.now()) == [(again.id, INSTANCE)]
    scoring_runs.run_instances_score(scoring_run_id=again.id, instance_id=INSTANCE)
    assert scoring_runs.scoring_run_finalize(scoring_run_id=again.id)
    assert by_level(ScoringRun.objects.get(id=again.id))["b1"].outcome == "scored"


def test_a_rescore_replays_the_recorded_replies_and_a_rejudge_asks_again(catalog, endpoint, submitter, tmp_path):
    submission = queued_run(submitter, catalog, tmp_path, {"b1": LEVELS["b1"], "b3": LEVELS["b3"]})
    first = score(submission)
    asked = len(endpoint.requests)
    assert asked >= 14
    replay = score(submission)
    assert replay.number == 2 and len(endpoint.requests) == asked
    assert {lv: s.final_score for lv, s in by_level(replay).items()} == \
        {lv: s.final_score for lv, s in by_level(first).items()}
    reused = JudgeCall.objects.filter(scoring_run=replay)
    assert reused.count() == 14 and all(c.reused_from is not None and c.input_tokens == 0 for c in reused)
    assert all(c["reused_from_scoring"] == 1 for c in by_level(replay)["b1"].result["judge_calls"])

    rejudged = score(submission, rejudge=True)
    assert len(endpoint.requests) > asked
    assert not JudgeCall.objects.filter(scoring_run=rejudged, reused_from__isnull=False).exists()
    # The endpoint answers a repeated question with the next value of its script (seq:8,9,7): the custom
    # scorer's one call now gets 9, not 8, so b1 gains 15 × 0.1 — the models were asked again.
    assert by_level(rejudged)["b1"].final_score == pytest.approx(by_level(first)["b1"].final_score + 1.5)


def test_the_cap_on_calls_in_flight_holds_across_workers(catalog, endpoint, submitter, tmp_path, settings):
    """Two dispatchers (two workers' tasks) answering at once never have more than the cap in flight."""
    import threading

    from django.db import connection

    settings.JUDGE_MAX_IN_FLIGHT = 2
    endpoint.latency = 0.2
    submission = queued_run(submitter, catalog, tmp_path, {"b1": LEVELS["b1"], "b2": LEVELS["b2"]})
    first = score(submission)  # records the requests once; the two runs below ask them again
    requests = {c.entry_id: [] for c in JudgeCall.objects.filter(scoring_run=first)}
    # The text judges' calls (the image judges' would need the staged images, which are gone).
    for call in JudgeCall.objects.filter(scoring_run=first).exclude(scorer="multimodal:vlm_judge").order_by("id"):
        requests[call.entry_id].append(call.request)
    runs = []
    for number in (2, 3):
        run = ScoringRun.objects.create(submission=submission, number=number, rejudge=True)
        for entry_id, entry_requests in requests.items():
            judge_services.judge_requests_record(run=run, entry_id=entry_id, requests=entry_requests)
        runs.append(run)
    endpoint.max_in_flight = 0
    staged = {entry_id: (tmp_path, tmp_path) for entry_id in requests}

    def answer(run: ScoringRun) -> None:
        try:
            judge_services.judge_calls_answer(run=run, staged=staged, scratch=tmp_path)
        finally:
            connection.close()

    threads = [threading.Thread(target=answer, args=(run,)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert JudgeCall.objects.filter(scoring_run__in=runs, status="answered").count() == 2 * 2 * 4
    assert endpoint.max_in_flight == 2
