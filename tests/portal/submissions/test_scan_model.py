"""The optional model-based scanner: off without a model and a judge endpoint; through the judges' client to a
local endpoint speaking the OpenAI protocol, each call recorded, budgeted in tokens and replayed for an
identical request; what the model finds kept as findings citing the kept log tail."""

import json

import pytest
from django.test import Client

from portal.submissions import scan_model
from portal.submissions.models import ScanFinding, ScanModelCall, Submission
from portal.submissions.scanning import submission_scan
from scoring import judge_services
from scoring.judging.client import SdkJudgeClient
from scoring.models import JudgeTokenLedger
from tests.judge_endpoint import JudgeEndpoint
from tests.scanners.portal_runs import results_tree, upload

pytestmark = pytest.mark.django_db
KEY_ENV = "SCANNER_TEST_KEY"
SECRET = "sk-scanner-test-0123456789abcdef"
REPLY = {"findings": [
    {"category": "answer_lookup", "severity": "high", "line": 2, "quote": "Web search results for query",
     "why": "It searched for the benchmark by name."},
    {"category": "made_up", "severity": "high", "line": 1, "quote": "x", "why": "not a category"},
    {"category": "refusal", "severity": "high", "line": 9999, "quote": "x", "why": "no such line"}]}


class FindingsEndpoint(JudgeEndpoint):
    """Answers every request with `reply` (or HTTP 500 when it is None)."""

    reply: object = REPLY

    def answer(self, path, body, headers=None):  # noqa: ANN001, ANN201
        with self._lock:
            self.requests.append({"path": path, "body": body, "headers": headers or {}})
        if self.reply is None:
            return 500, {"error": {"message": "scripted", "type": "server_error"}}, 0.0
        text = self.reply if isinstance(self.reply, str) else json.dumps(self.reply)
        return 200, self.wire_body(path, body, text), 0.0


@pytest.fixture
def endpoint(settings, monkeypatch):  # noqa: ANN201
    with FindingsEndpoint() as server:
        settings.JUDGE_API_BASE, settings.JUDGE_API_KEY_ENV, settings.JUDGE_API_PROTOCOL = server.url, KEY_ENV, \
            "openai"
        settings.SCANNER_MODEL = "openai/scanner-model"
        monkeypatch.setenv(KEY_ENV, SECRET)
        client = SdkJudgeClient(judge_services.judge_endpoint(), timeout=5, sleep=lambda seconds: None)
        monkeypatch.setattr(scan_model, "judge_client", lambda: client)
        yield server


@pytest.fixture
def scanned_run(corpus_catalog, submitter, tmp_path) -> Submission:
    run = upload(Client(), submitter.user, results_tree(tmp_path / "results", [
        ("x_search_benchmark", "pendulum", "b2"), ("clean_forecast_script", "forecast", "b3")]), tmp_path)
    submission_scan(submission_id=run.id)
    return run


def model_findings(run: Submission) -> list[ScanFinding]:
    return list(ScanFinding.objects.filter(submission=run, detector=scan_model.DETECTOR).order_by("entry__base_name"))


def test_it_is_off_without_a_model_or_without_a_judge_endpoint(scanned_run, settings, monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    settings.JUDGE_API_BASE = ""
    assert scan_model.model_scan_run(submission_id=scanned_run.id) == {"state": "off"}
    settings.SCANNER_MODEL = "openai/scanner-model"  # a model, but nowhere to send it
    assert scan_model.model_scan_run(submission_id=scanned_run.id) == {"state": "off"}
    assert not ScanModelCall.objects.exists() and not model_findings(scanned_run)
    assert Submission.objects.get(id=scanned_run.id).scan["model"] == {"state": "off"}


def test_each_result_is_asked_once_recorded_budgeted_and_its_findings_kept(scanned_run, endpoint):
    record = scan_model.model_scan_run(submission_id=scanned_run.id)
    assert record == {"state": "done", "model": "openai/scanner-model", "answered": 2, "reused": 0, "refused": 0,
                      "failed": 0, "unreadable": 0}
    assert len(endpoint.requests) == 2
    user = next(text for text in (r["body"]["messages"][1]["content"] for r in endpoint.requests)
                if text.startswith("Task physics.pendulum_damping"))
    assert "    2  [Tool] WebSearch(['query'])" in user  # the kept log, numbered
    assert "- answer_search (high):" in user  # what the deterministic scanners found
    findings = model_findings(scanned_run)
    assert len(findings) == 2  # one per result: the other two items name no category or no line of the record
    first = next(f for f in findings if f.entry.base_name.startswith("physics"))
    assert (first.category, first.severity, first.cites, first.location) == ("answer_lookup", "high", "summary",
                                                                            "log tail, line 2")
    assert first.detail == "openai/scanner-model read the record: It searched for the benchmark by name."
    calls = ScanModelCall.objects.filter(submission=scanned_run)
    assert {c.status for c in calls} == {"answered"} and all(c.input_tokens > 0 and c.output_tokens > 0 for c in calls)
    spent = sum(c.input_tokens + c.output_tokens for c in calls)
    assert JudgeTokenLedger.objects.get(scope=f"scan-run:{scanned_run.id}").tokens == spent
    assert JudgeTokenLedger.objects.filter(scope__startswith="scan-day:").get().tokens == spent
    assert all(SECRET not in json.dumps(c.request) for c in calls)


def test_a_scan_again_replays_the_recorded_replies(scanned_run, endpoint):
    scan_model.model_scan_run(submission_id=scanned_run.id)
    before = [(f.entry_id, f.category, f.location) for f in model_findings(scanned_run)]
    endpoint.reply = {"findings": []}  # a second call would now answer otherwise
    record = scan_model.model_scan_run(submission_id=scanned_run.id)
    assert record["reused"] == 2 and record["answered"] == 0 and len(endpoint.requests) == 2
    assert [(f.entry_id, f.category, f.location) for f in model_findings(scanned_run)] == before
    assert ScanModelCall.objects.filter(status="reused", reused_from__isnull=False).count() == 2


def test_a_used_up_budget_asks_nothing_and_says_so(scanned_run, endpoint, settings):
    settings.SCANNER_MODEL_RUN_TOKENS = 50
    record = scan_model.model_scan_run(submission_id=scanned_run.id)
    assert record["refused"] == 2 and endpoint.requests == [] and not model_findings(scanned_run)
    assert "the run's model-scan budget (50 tokens) is used up" in ScanModelCall.objects.first().error


def test_an_endpoint_that_does_not_answer_is_recorded_and_gives_no_finding(scanned_run, endpoint):
    endpoint.reply = None
    record = scan_model.model_scan_run(submission_id=scanned_run.id)
    assert record["failed"] == 2 and not model_findings(scanned_run)
    call = ScanModelCall.objects.first()
    assert "500" in call.error and SECRET not in call.error
    assert JudgeTokenLedger.objects.get(scope=f"scan-run:{scanned_run.id}").tokens == 0  # the reservation returned


def test_a_reply_that_is_not_the_json_asked_for_is_counted_unreadable(scanned_run, endpoint, maintainer, client):
    endpoint.reply = 'Sure! ```json\n{"findings": [{"category": "refusal", "severity": "low", "line": 1, ' \
                     '"quote": "q", "why": "w"}]}\n```'
    assert scan_model.model_scan_run(submission_id=scanned_run.id)["unreadable"] == 0  # a fenced block is read
    assert len(model_findings(scanned_run)) == 2
    endpoint.reply = "I could not decide."
    ScanModelCall.objects.all().delete()
    assert scan_model.model_scan_run(submission_id=scanned_run.id)["unreadable"] == 2
    client.force_login(maintainer.user)
    page = client.get(f"/leaderboard/review/{scanned_run.id}/").content.decode()
    assert 'data-testid="scan-model"' in page and "The model openai/scanner-model also read" in page


def test_parse_reply_takes_the_object_asked_for_and_nothing_else():
    assert scan_model.parse_reply('{"findings": [{"a": 1}, 2]}') == [{"a": 1}]
    assert scan_model.parse_reply('prose {"findings": []} more prose') == []
    assert scan_model.parse_reply('{"score": 5}') is None and scan_model.parse_reply("[" * 10_000) is None


def test_the_scan_task_asks_the_model_after_the_deterministic_scan(corpus_catalog, submitter, tmp_path, endpoint):
    from portal.submissions.scan_tasks import submission_scan_task

    run = upload(Client(), submitter.user, results_tree(tmp_path / "results", [
        ("x_search_benchmark", "pendulum", "b2")]), tmp_path)
    submission_scan_task.apply(args=[str(run.id)])
    record = Submission.objects.get(id=run.id).scan
    assert record["state"] == "done" and record["model"]["answered"] == 1
    assert {f.detector for f in ScanFinding.objects.filter(submission=run)} == {"answer_search", "model_review"}


def test_a_models_findings_count_in_public_only_once_upheld(scanned_run, endpoint):
    from leaderboard.services import scan_summary_public

    scan_model.model_scan_run(submission_id=scanned_run.id)
    Submission.objects.filter(id=scanned_run.id).update(scan={**Submission.objects.get(id=scanned_run.id).scan,
                                                              "state": "done"})
    scanned_run.refresh_from_db()
    assert scan_summary_public(scanned_run)["categories"] == {"answer_lookup": 1}  # the detectors' own finding
    ScanFinding.objects.filter(submission=scanned_run, detector="model_review").update(decision="upheld")
    assert scan_summary_public(scanned_run)["categories"] == {"answer_lookup": 3}
