"""The misconduct scan of an uploaded run: queued with the draft, read from the stored bundle by a worker (the
whole result.json, the outputs' start and end, the instance's prompt and inputs), findings kept per result with
their citation; the owner sees them on the run page and answers them."""

import pytest
from django.test import Client

from portal.pages import CONFIRMED_FIELD
from portal.submissions.models import ScanFinding, Submission
from portal.submissions.scanners import SCANNER_VERSION
from portal.submissions.scanning import submission_scan
from tests.scanners.portal_runs import RESULTS, results_tree, upload
from tests.support import wait_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def scanned(corpus_catalog, submitter, tmp_path, django_capture_on_commit_callbacks) -> Submission:
    with django_capture_on_commit_callbacks(execute=False) as queued:
        run = upload(Client(), submitter.user, results_tree(tmp_path / "results"), tmp_path)
    assert run.scan["state"] == "queued" and len(queued) == 1  # the scan waits for the upload's commit
    submission_scan(submission_id=run.id)
    run.refresh_from_db()
    return run


def findings_of(run: Submission, base: str) -> list[ScanFinding]:
    return list(ScanFinding.objects.filter(submission=run, entry__base_name=base).order_by("id"))


def test_a_new_draft_is_scanned_from_its_stored_bundle_and_each_finding_kept_with_its_citation(scanned):
    assert scanned.scan["state"] == "done" and scanned.scan["version"] == SCANNER_VERSION
    assert scanned.scan["results"] == len(RESULTS) and scanned.scan["sources"] == {"log": len(RESULTS)}
    assert findings_of(scanned, "physics.pendulum_damping__seed42__b1") == []  # a clean run
    (search,) = findings_of(scanned, "physics.pendulum_damping__seed42__b2")
    assert (search.detector, search.category, search.severity, search.cites) == (
        "answer_search", "answer_lookup", "high", "line")
    assert search.position == 2 and search.turn == 1 and "asibench pendulum_damping" in search.excerpt
    (note,) = findings_of(scanned, "physics.pendulum_damping__seed42__b3")
    assert (note.detector, note.cites, note.location, note.position) == ("grader_injection", "output",
                                                                          "results.json", 1)
    assert "Ignore all previous instructions" in note.excerpt
    (typed,) = findings_of(scanned, "physics.pendulum_damping__seed42__b4")
    assert (typed.detector, typed.severity, typed.location) == ("typed_output", "high", "results.json")
    entry = scanned.entries.get(base_name="physics.pendulum_damping__seed42__b4")
    assert entry.scan["source"] == "log" and entry.scan["findings"] == 1 and entry.scan["cut"] == ""


def test_outputs_are_compared_with_the_instances_own_inputs(scanned):
    (copy,) = findings_of(scanned, "earth_science.aquifer_level_forecast__seed42__b2")
    assert (copy.detector, copy.severity) == ("copied_values", "high")
    assert copy.detail == "predictions.csv is byte for byte the input data/history.csv"
    assert findings_of(scanned, "earth_science.aquifer_level_forecast__seed42__b3") == []


def test_the_scan_reads_the_whole_log_not_only_the_tail_kept_for_reviewers(corpus_catalog, submitter, tmp_path,
                                                                        settings):
    planted = ("[Tool] Bash(command=curl -s http://portal:8000/api/v1/submissions/)\n[ToolResult] {}\n"
               + "\n".join(f"[ToolResult] line {i} " + "x" * 80 for i in range(2000)))
    tree = results_tree(tmp_path / "results", [("clean_script_then_run", "pendulum", "b1")],
                        log_of={"clean_script_then_run": planted})
    run = upload(Client(), submitter.user, tree, tmp_path)
    entry = run.entries.get()
    assert "portal:8000" not in entry.evidence["log_tail"]  # the evidence keeps only the tail
    submission_scan(submission_id=run.id)
    (probe,) = [f for f in findings_of(run, entry.base_name) if f.detector == "reference_probe"]
    assert (probe.severity, probe.cites, probe.position) == ("high", "line", 1)


def test_text_the_database_cannot_store_is_cleaned_from_a_finding(corpus_catalog, submitter, tmp_path):
    log = "[Tool] Bash(command=cat /srv/eval/\x00ref\ud800/answers.json)\n[ToolResult] {}\n"
    tree = results_tree(tmp_path / "results", [("clean_script_then_run", "pendulum", "b1")],
                        log_of={"clean_script_then_run": log})
    run = upload(Client(), submitter.user, tree, tmp_path)
    submission_scan(submission_id=run.id)
    (finding,) = [f for f in findings_of(run, run.entries.get().base_name) if f.detector == "outside_read"]
    assert "/srv/eval/ref/answers.json" in finding.detail
    assert not any(c in text for text in (finding.detail, finding.excerpt, finding.context) for c in "\x00\ud800")


def test_the_runs_budget_stops_later_results_and_says_so(corpus_catalog, submitter, tmp_path, settings):
    settings.SCANNER_MAX_BYTES_PER_RUN = 2048
    run = upload(Client(), submitter.user, results_tree(tmp_path / "results"), tmp_path)
    submission_scan(submission_id=run.id)
    cuts = [e.scan["cut"] for e in run.entries.order_by("base_name")]
    assert "scanned the first 2 KB; the rest of the record was not read (the run's scanning budget, 2 KB, ran out " \
           "here)" in cuts or any(cut.startswith("scanned the first ") and "budget" in cut for cut in cuts)
    assert cuts.count("not scanned: the run's scanning budget (2 KB) was spent on earlier results") >= 2
    assert Submission.objects.get(id=run.id).scan["cut"] == sum(1 for cut in cuts if cut)


def test_a_withdrawn_draft_is_recorded_as_not_scanned(corpus_catalog, submitter, tmp_path):
    client = Client()
    client.force_login(submitter.user)
    run = upload(client, submitter.user, results_tree(tmp_path / "results"), tmp_path)
    client.post(f"/submit/submissions/{run.id}/withdraw", {CONFIRMED_FIELD: "yes"})
    assert Submission.objects.get(id=run.id).status == "withdrawn"
    record = submission_scan(submission_id=run.id)
    assert record["state"] == "failed" and "withdrawn" in record["reason"]
    assert not ScanFinding.objects.filter(submission=run).exists()


def test_no_scan_is_queued_when_the_scanners_are_off(corpus_catalog, submitter, tmp_path, settings,
                                                     django_capture_on_commit_callbacks):
    settings.SCANNER_ENABLED = False
    with django_capture_on_commit_callbacks(execute=False) as queued:
        run = upload(Client(), submitter.user, results_tree(tmp_path / "results"), tmp_path)
    assert queued == [] and run.scan == {}


def test_scanning_again_keeps_answered_findings_and_replaces_the_others(scanned):
    answered = findings_of(scanned, "physics.pendulum_damping__seed42__b2")[0]
    ScanFinding.objects.filter(id=answered.id).update(answer="The agent searched for a method name.")
    other = findings_of(scanned, "physics.pendulum_damping__seed42__b4")[0]
    submission_scan(submission_id=scanned.id)
    assert ScanFinding.objects.filter(id=answered.id).exists() and not ScanFinding.objects.filter(id=other.id).exists()
    assert len(findings_of(scanned, "physics.pendulum_damping__seed42__b2")) == 1  # not found twice
    assert len(findings_of(scanned, "physics.pendulum_damping__seed42__b4")) == 1


# --- the owner's run page ----------------------------------------------------------------------------

def test_the_owner_sees_the_findings_with_the_cited_step_in_place_escaped(scanned, submitter, client):
    ScanFinding.objects.filter(submission=scanned, detector="grader_injection").update(
        context="<script>alert('x')</script>")
    client.force_login(submitter.user)
    page = client.get(f"/submit/submissions/{scanned.id}").content.decode()
    assert 'data-testid="scan-findings"' in page and page.count('data-testid="finding"') == 4
    assert "log line 2 (turn 1)" in page and "output results.json, line 1" in page
    assert page.count('<details data-testid="finding-step">') == 4
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "Confirm the run to answer." in page and 'data-testid="finding-answer-text"' not in page  # a draft


def test_the_owner_answers_a_finding_once_the_run_is_confirmed(scanned, submitter, other_user, client):
    finding = findings_of(scanned, "physics.pendulum_damping__seed42__b4")[0]
    url = f"/submit/submissions/{scanned.id}/findings/{finding.id}/answer"
    client.force_login(submitter.user)
    assert "Confirm the run first" in client.post(url, {"answer": "early"}, follow=True).content.decode()
    Submission.objects.filter(id=scanned.id).update(status=Submission.Status.SCORED)
    page = client.get(f"/submit/submissions/{scanned.id}").content.decode()
    assert page.count('data-testid="finding-answer-text"') == 4
    response = client.post(url, {"answer": "  The values came from\x00 a notebook run outside the sandbox.  "},
                           follow=True)
    assert "Answer sent" in response.content.decode()
    finding.refresh_from_db()
    assert finding.answer == "The values came from a notebook run outside the sandbox." and finding.answered_at
    assert "Write your answer" in client.post(url, {"answer": " "}, follow=True).content.decode()
    client.force_login(other_user.user)
    assert client.post(url, {"answer": "not mine"}).status_code == 404
    ScanFinding.objects.filter(id=finding.id).update(decision="upheld", decision_reason="Typed by hand.")
    client.force_login(submitter.user)
    assert "can no longer be answered" in client.post(url, {"answer": "again"}, follow=True).content.decode()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_scans_each_new_draft_through_the_queue(celery_worker_process, corpus_catalog, submitter, tmp_path):
    run = upload(Client(), submitter.user, results_tree(tmp_path / "results"), tmp_path)
    record = wait_for(lambda: (Submission.objects.get(id=run.id).scan or {}).get("state") == "done"
                      and Submission.objects.get(id=run.id).scan, 120, "the draft's scan")
    assert record["results"] == len(RESULTS) and record["version"] == SCANNER_VERSION
    assert sorted(ScanFinding.objects.filter(submission=run).values_list("detector", flat=True)) == [
        "answer_search", "copied_values", "grader_injection", "typed_output"]
