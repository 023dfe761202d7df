"""The owner's run page and "My runs" in every state of a run: the queue banner only while queued, the
per-task scores kept once scored (whole percents for the owner, as while scoring), the review state
with a rejection's reason; and a Confirm that lost its session comes back as "press Confirm again"."""

import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from portal.status.services import worker_heartbeat_record
from portal.submissions.models import Submission
from tests.leaderboard.factories import make_catalog
from tests.portal.submissions.run_states import TASK_MEAN_EXACT, TASK_MEAN_OWNER, run_in_state
from tests.support import PASSWORD

pytestmark = pytest.mark.django_db


@pytest.fixture
def instances(db):
    return make_catalog()["seed42"]


def logged_in(persona) -> Client:  # noqa: ANN001
    client = Client()
    client.force_login(persona.user)
    return client


def run_page(persona, run) -> str:  # noqa: ANN001
    response = logged_in(persona).get(f"/submit/submissions/{run.id}")
    assert response.status_code == 200
    return response.content.decode()


def text_of(html: str, name: str) -> str:
    """The text of the first element with data-testid=`name`, tags stripped ("" if there is none)."""
    match = re.search(rf'<(\w+)[^>]*data-testid="{name}"[^>]*>(.*?)</\1>', html, re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", match.group(2))).strip() if match else ""


def test_the_queue_banner_shows_only_while_queued(instances, submitter, maintainer):
    queued = run_in_state(submitter.user, instances, "queued")
    assert "Confirmed: your run is in the scoring queue, position 1 of 1" in text_of(run_page(submitter, queued),
                                                                                   "queue-position")
    for state in ("scoring", "scored", "published", "rejected"):
        run = run_in_state(submitter.user, instances, state, maintainer=maintainer.user, model=f"m-{state}")
        html = run_page(submitter, run)
        assert 'data-testid="queue-position"' not in html and "scoring queue" not in html, state


def test_confirm_leaves_no_flash_banner_behind(instances, submitter):
    worker_heartbeat_record(hostname="scoring@host")  # a live worker: nothing to add to the live status
    draft = run_in_state(submitter.user, instances, "draft")
    owner = logged_in(submitter)
    page = owner.post(f"/submit/submissions/{draft.id}/confirm", follow=True).content.decode()
    assert Submission.objects.get(id=draft.id).status == "queued"
    assert 'class="messages"' not in page  # the live status carries "in the scoring queue" instead
    assert 'data-testid="queue-position"' in page


def test_the_per_task_scores_stay_once_scored_whole_percents_for_the_owner(instances, submitter, maintainer):
    scoring = run_in_state(submitter.user, instances, "scoring")
    html = run_page(submitter, scoring)
    assert "Scores so far" in html and re.search(rf">{TASK_MEAN_OWNER}</td>", task_table(html))

    scored = run_in_state(submitter.user, instances, "scored", model="other")
    html = run_page(submitter, scored)
    table = task_table(html)
    assert "Scores per task" in html and "Scores so far" not in html
    tasks = {i.task_id for i in instances}
    assert all(f"<code>{task}</code>" in table for task in tasks)
    assert table.count(f'<td class="num">{TASK_MEAN_OWNER}</td>') == len(tasks) and "26.4" not in table
    assert table.count('<td class="num">4 of 4</td>') == len(tasks)
    exact = task_table(run_page(maintainer, scored))
    assert exact.count(f'<td class="num">{TASK_MEAN_EXACT}</td>') == len(tasks)


def task_table(html: str) -> str:
    return html.split('data-testid="task-progress"')[1].split("</table>")[0]


@pytest.mark.parametrize(("state", "label"), [("scored", "waiting for review"), ("published", "published"),
                                              ("rejected", "rejected"), ("unpublished", "unpublished")])
def test_the_review_state_is_on_the_run_page_and_in_my_runs(instances, submitter, maintainer, state, label):
    run = run_in_state(submitter.user, instances, state, maintainer=maintainer.user)
    html = run_page(submitter, run)
    assert text_of(html, "review-state") == label
    dashboard = logged_in(submitter).get("/submit/dashboard").content.decode()
    assert text_of(dashboard, "run-review-state") == label
    if state == "rejected":
        reason = "Outputs byte-identical to another user's run."
        assert text_of(html, "reject-reason") == f"Reason: {reason.replace(chr(39), '&#x27;')}"
        assert text_of(dashboard, "run-review-reason") == reason.replace("'", "&#x27;")
    if state == "published":
        assert 'data-testid="review-entry"' in html and "Claude Code · Opus" in html
    if state == "scored":
        assert "a maintainer checks every scored run" in html


@pytest.mark.parametrize("state", ["draft", "queued", "scoring"])
def test_runs_not_yet_scored_have_no_review_state(instances, submitter, state):
    run = run_in_state(submitter.user, instances, state)
    assert 'data-testid="review-state"' not in run_page(submitter, run)
    assert 'data-testid="run-review-state"' not in logged_in(submitter).get("/submit/dashboard").content.decode()


def test_my_runs_reads_the_review_states_in_a_fixed_number_of_queries(instances, submitter, maintainer):
    """As many queries for four runs in every review state as for one: none per run. (A queued run's
    queue position costs its own queries, on purpose: it is not a review state.)"""
    owner = logged_in(submitter)

    def dashboard_queries() -> int:
        owner.get("/submit/dashboard")  # warm the session and caches
        with CaptureQueriesContext(connection) as queries:
            assert owner.get("/submit/dashboard").status_code == 200
        return len(queries)

    run_in_state(submitter.user, instances, "scored", maintainer=maintainer.user, model="m0")
    one = dashboard_queries()
    for k, state in enumerate(["published", "rejected", "scored"], start=1):
        run_in_state(submitter.user, instances, state, maintainer=maintainer.user, model=f"m{k}")
    assert dashboard_queries() == one


# --- Confirm after the session expired ------------------------------------------------------------------

def test_a_confirm_that_lost_its_session_leads_through_login_to_press_confirm_again(instances, submitter):
    draft = run_in_state(submitter.user, instances, "draft")
    browser = Client()
    refused = browser.post(f"/submit/submissions/{draft.id}/confirm")  # the session is gone
    assert refused.status_code == 302 and refused["Location"].startswith("/accounts/login/?next=")
    login_page = browser.get(refused["Location"])
    assert login_page.status_code == 200
    signed_in = browser.post(refused["Location"], {"login": submitter.email, "password": PASSWORD}, follow=True)
    assert signed_in.status_code == 200, "never a 405"
    assert signed_in.redirect_chain[-1][0] == f"/submit/submissions/{draft.id}?confirm=again"
    page = signed_in.content.decode()
    assert "Press “Confirm and queue for scoring” again" in text_of(page, "confirm-again")
    assert Submission.objects.get(id=draft.id).status == "draft", "a GET never confirms"
    browser.post(f"/submit/submissions/{draft.id}/confirm")
    assert Submission.objects.get(id=draft.id).status == "queued"


def test_the_press_again_note_is_for_the_owners_draft_only(instances, submitter, maintainer):
    draft = run_in_state(submitter.user, instances, "draft")
    assert 'data-testid="confirm-again"' not in run_page(submitter, draft)  # only after the round trip
    reviewer = logged_in(maintainer).get(f"/submit/submissions/{draft.id}?confirm=again").content.decode()
    assert 'data-testid="confirm-again"' not in reviewer
    queued = run_in_state(submitter.user, instances, "queued", model="other")
    owner = logged_in(submitter).get(f"/submit/submissions/{queued.id}?confirm=again").content.decode()
    assert 'data-testid="confirm-again"' not in owner


def test_a_strangers_confirm_link_is_still_a_404_after_login(instances, submitter, other_user):
    draft = run_in_state(submitter.user, instances, "draft")
    stranger = logged_in(other_user)
    followed = stranger.get(f"/submit/submissions/{draft.id}/confirm", follow=True)
    assert followed.status_code == 404
