"""Scanner findings in review: totals and findings per result on the review page (the cited step opens in
place), the queue's and the bulk review's word on which runs carry findings, the maintainer's decision as a
public moderation-log event, and what a published entry shows: counts per category, never an excerpt."""

import pytest
from django.test import Client

from leaderboard.models import ModerationEvent, ReviewAction
from leaderboard.services import run_review_publish
from portal.submissions.models import ScanFinding, Submission
from portal.submissions.scanners import CATEGORIES, DETECTORS, SCANNER_VERSION
from tests.leaderboard.factories import RunSpec, scored_run
from tests.support import browser_login, screenshot

pytestmark = pytest.mark.django_db

EXCERPT = "cat /srv/eval/reference/answers.json secret-excerpt-9f2"
ANSWER = "owner-answer-71c: the agent listed its own scratch copy"


def scanned(run: Submission, findings: list[tuple[int, str, str]] = ()) -> list[ScanFinding]:
    """Record a finished scan of `run` with findings (entry index, detector, severity)."""
    entries = list(run.entries.order_by("base_name"))
    Submission.objects.filter(id=run.id).update(scan={"state": "done", "version": SCANNER_VERSION, "at": "",
                                                      "results": len(entries), "sources": {"log": len(entries)},
                                                      "cut": 0})
    run.refresh_from_db()
    return ScanFinding.objects.bulk_create(ScanFinding(
        submission=run, entry=entries[i], scanner_version=SCANNER_VERSION, detector=detector,
        category=DETECTORS[detector][0], severity=severity, cites="step", position=7 + n, excerpt=EXCERPT,
        detail=f"reads /srv/eval/reference/answers.json ({n})", context=f"Bash\ncommand={EXCERPT} <b>bold</b>")
        for n, (i, detector, severity) in enumerate(findings))


@pytest.fixture
def runs(catalog, submitter, other_user) -> list[Submission]:
    flagged = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], model="flagged"))
    clean = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"], model="clean"))
    never = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"], model="never"))
    scanned(flagged, [(0, "outside_read", "high"), (0, "answer_search", "medium"), (3, "environment_error", "info")])
    scanned(clean)
    return [flagged, clean, never]


def test_the_review_page_shows_totals_and_each_finding_with_the_cited_step_in_place(runs, maintainer, client):
    client.force_login(maintainer.user)
    page = client.get(f"/leaderboard/review/{runs[0].id}/").content.decode()
    summary = page.split('data-testid="review-scan-summary">')[1].split("</dd>")[0]
    assert "3 findings</a> in 2 of" in summary and "(1 high, 1 medium, 1 info)" in summary
    assert SCANNER_VERSION in summary
    assert page.count('data-testid="finding"') == 3 and page.count('data-testid="findings-result"') == 2
    assert page.count('<details data-testid="finding-step">') == 3 and "step 7" in page
    assert f'data-testid="scan-total-outside_access"><td>{CATEGORIES["outside_access"]}</td><td class="num">1<' in page
    assert "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold</b>" not in page
    assert page.count('data-testid="finding-decide"') == 3 and 'data-testid="rescan"' in page
    assert "findings_mode" not in page  # the template's own notes stay out of the page
    clean = client.get(f"/leaderboard/review/{runs[1].id}/").content.decode()
    assert 'data-testid="no-findings"' in clean and "no findings · scanners" in clean
    assert "not scanned" in client.get(f"/leaderboard/review/{runs[2].id}/").content.decode()


def test_the_queue_says_which_runs_carry_findings(runs, maintainer, client):
    ScanFinding.objects.filter(detector="environment_error").update(decision="dismissed")
    client.force_login(maintainer.user)
    page = client.get("/leaderboard/review/").content.decode()
    cells = [c.split("</td>")[0] for c in page.split('data-testid="queue-findings">')[1:]]
    assert len(cells) == 3
    assert any(">2 · 1 high<" in c and f"/leaderboard/review/{runs[0].id}/#findings" in c for c in cells)
    assert any('"badge good">0<' in c for c in cells) and any("not scanned" in c for c in cells)


def bulk(client: Client, runs: list[Submission], action: str, reason: str = "") -> str:
    return client.post("/leaderboard/review/bulk", {"runs": [str(r.id) for r in runs], "action": action,
                                                    "reason": reason, "tab": "pending"}, follow=True).content.decode()


def test_the_bulk_review_says_which_selected_runs_carry_findings(runs, maintainer, client):
    client.force_login(maintainer.user)
    page = bulk(client, runs[:2], "publish", "Batch reviewed")
    assert (f"Scanner findings stand in 1 of the 2 selected run(s): {str(runs[0].id)[:8]} (1 high, 1 medium, "
            "1 info).") in page
    assert "None of the selected runs carries scanner findings." in bulk(client, runs[1:], "rescore")


def decide(client: Client, run: Submission, finding: ScanFinding, decision: str, reason: str) -> str:
    return client.post(f"/leaderboard/review/{run.id}/findings/{finding.id}/decide",
                       {"decision": decision, "reason": reason}, follow=True).content.decode()


def test_a_decision_on_an_answered_finding_is_a_public_moderation_event_without_excerpt_or_answer(
        runs, maintainer, submitter, client):
    finding = ScanFinding.objects.get(submission=runs[0], detector="outside_read")
    ScanFinding.objects.filter(id=finding.id).update(answer=ANSWER)
    client.force_login(submitter.user)
    assert client.post(f"/leaderboard/review/{runs[0].id}/findings/{finding.id}/decide",
                       {"decision": "dismissed", "reason": "x"}).status_code == 404
    client.force_login(maintainer.user)
    assert "Say why" in decide(client, runs[0], finding, "dismissed", "  ")
    assert "Uphold or dismiss" in decide(client, runs[0], finding, "ignored", "because")
    page = decide(client, runs[0], finding, "dismissed", "The path is the agent's own scratch copy.")
    assert "Decided; the moderation log says so." in page and 'data-testid="finding-decision"' in page
    finding.refresh_from_db()
    assert (finding.decision, finding.decided_by) == ("dismissed", maintainer.user)
    event = ModerationEvent.objects.get(kind="finding")
    assert event.reason == (f"A finding of {CATEGORIES['outside_access']} was dismissed after the owner's answer: "
                            "The path is the agent's own scratch copy.") and event.display_name == ""
    assert ReviewAction.objects.filter(kind="finding", actor=maintainer.user, submission=runs[0]).count() == 1
    decide(client, runs[0], finding, "dismissed", "The path is the agent's own scratch copy.")  # pressed twice
    assert ModerationEvent.objects.filter(kind="finding").count() == 1
    public = Client().get("/leaderboard/moderation").content.decode()
    assert 'data-testid="moderation-finding"' in public and "an unpublished run" in public
    api = Client().get("/api/v1/leaderboard/moderation").content.decode()
    for private in (EXCERPT, ANSWER, "secret-excerpt"):
        assert private not in public and private not in api


def test_a_published_entry_shows_counts_per_category_and_follows_decisions(runs, maintainer, client):
    entry = run_review_publish(submission_id=runs[0].id, actor=maintainer.user, display_name="Flagged run")
    assert entry.provenance["scan"] == {"state": "done", "version": SCANNER_VERSION, "results": 20, "total": 3,
                                        "dismissed": 0, "categories": {"outside_access": 1, "answer_lookup": 1,
                                                                       "environment_error": 1}}
    page = Client().get(f"/leaderboard/entries/{entry.id}/").content.decode()
    scan = page.split('data-testid="entry-scan">')[1].split("</div>")[0]
    assert f'data-testid="entry-scan-answer_lookup"><td>{CATEGORIES["answer_lookup"]}</td><td class="num">1<' in scan
    assert SCANNER_VERSION in scan and "secret-excerpt" not in page and "/srv/eval" not in page
    client.force_login(maintainer.user)
    finding = ScanFinding.objects.get(submission=runs[0], detector="answer_search")
    decide(client, runs[0], finding, "dismissed", "A documentation page, not an answer.")
    page = Client().get(f"/leaderboard/entries/{entry.id}/").content.decode()
    assert 'data-testid="entry-scan-answer_lookup"' not in page and 'data-testid="entry-scan-dismissed"' in page
    event = ModerationEvent.objects.get(kind="finding")
    assert event.display_name == "Flagged run" and "was dismissed: A documentation page" in event.reason


def test_a_clean_scan_shows_no_findings_with_the_version_and_an_unscanned_run_says_so(runs, maintainer):
    clean = run_review_publish(submission_id=runs[1].id, actor=maintainer.user, display_name="Clean run")
    page = Client().get(f"/leaderboard/entries/{clean.id}/").content.decode()
    assert 'data-testid="entry-scan-none"' in page and f"No findings: the scanners {SCANNER_VERSION} read" in page
    never = run_review_publish(submission_id=runs[2].id, actor=maintainer.user, display_name="Old run")
    page = Client().get(f"/leaderboard/entries/{never.id}/").content.decode()
    assert 'data-testid="entry-scan-not-scanned"' in page and 'data-testid="entry-scan-none"' not in page


def test_a_maintainer_scans_a_run_again(runs, maintainer, client, django_capture_on_commit_callbacks):
    client.force_login(maintainer.user)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        page = client.post(f"/leaderboard/review/{runs[0].id}/rescan", follow=True).content.decode()
    assert "Scan queued" in page and len(queued) == 1
    assert Submission.objects.get(id=runs[0].id).scan["state"] == "queued"


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_cited_step_opens_in_place_and_a_decision_reaches_the_public_log(portal_server, page, submitter,
                                                                            maintainer):
    from tests.leaderboard.factories import make_catalog

    run = scored_run(RunSpec(owner=submitter.user, instances=make_catalog({"math": 1})["seed42"]))
    (finding,) = scanned(run, [(1, "outside_read", "high")])
    browser_login(page, portal_server, maintainer)
    page.goto(f"{portal_server.url}/leaderboard/review/{run.id}/")
    context = page.locator("[data-testid=finding-context]")
    assert not context.is_visible()
    page.click("[data-testid=finding-step] summary")
    assert context.is_visible() and "secret-excerpt-9f2 <b>bold</b>" in context.inner_text()
    screenshot(page, "review-finding-open")
    page.select_option("[data-testid=finding-decision-select]", "upheld")
    page.fill("[data-testid=finding-decision-reason]", "Reading the reference directory is not allowed.")
    page.click("[data-testid=finding-decide]")
    page.wait_for_selector("text=Decided; the moderation log says so.")
    assert page.locator(f"#finding-{finding.id} [data-testid=finding-decision]").inner_text().startswith("upheld")
    page.goto(f"{portal_server.url}/leaderboard/moderation")
    assert "was upheld: Reading the reference directory" in page.locator("[data-testid=moderation-log]").inner_text()


def test_a_new_scan_of_a_published_run_updates_its_public_counts(runs, maintainer,
                                                                  django_capture_on_commit_callbacks):
    from portal.submissions.scanning import _findings_store

    entry = run_review_publish(submission_id=runs[2].id, actor=maintainer.user, display_name="Old run")
    assert entry.provenance["scan"] == {"state": "not_scanned", "version": ""}
    with django_capture_on_commit_callbacks(execute=True):
        _findings_store(runs[2], {})
    entry.refresh_from_db()
    assert entry.provenance["scan"]["state"] == "done" and entry.provenance["scan"]["total"] == 0
    page = Client().get(f"/leaderboard/entries/{entry.id}/").content.decode()
    assert 'data-testid="entry-scan-none"' in page
