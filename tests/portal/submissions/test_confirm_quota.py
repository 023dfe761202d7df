"""Scoring is an oracle on private references: confirms per user per day and results per bundle
are capped, with a specific refusal, and the number of confirmed attempts is shown."""

import csv
import io
import uuid
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from leaderboard import services as review
from portal.errors import QuotaExceeded
from portal.submissions import services
from portal.submissions.models import Submission, SubmissionEntry
from tests.leaderboard.factories import RunSpec, make_catalog, scored_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def catalog(db):
    return make_catalog()


def draft(owner, instances, *, attempts: int = 1, agent: str = "codex") -> Submission:
    submission = Submission.objects.create(owner=owner, dataset_id=instances[0].dataset_id, archive="submissions/x",
                                           archive_sha256=uuid.uuid4().hex * 2, archive_bytes=1, agent=agent,
                                           model="gpt-x", effort="high", sandbox="os",
                                           expires_at=timezone.now() + timedelta(days=1))
    SubmissionEntry.objects.bulk_create(
        SubmissionEntry(submission=submission, base_name=f"{i.instance_id}__{lv}__a{a}", instance=i,
                        task_id=i.task_id, prompt_level=lv, attempt=a, result_status="completed")
        for i in instances for lv in ("b1", "b2", "b3", "b4") for a in range(1, attempts + 1))
    return submission


def test_confirms_per_day_are_capped_with_a_specific_message(catalog, submitter, other_user, settings,
                                                             django_capture_on_commit_callbacks):
    settings.CONFIRMS_PER_DAY_LIMIT = 3
    drafts = [draft(submitter.user, catalog["seed42"]) for _ in range(4)]
    with django_capture_on_commit_callbacks(execute=False) as queued:
        for d in drafts[:3]:
            assert services.submission_confirm(user=submitter.user, submission_id=str(d.id)).status == "queued"
    assert len(queued) == 3
    with django_capture_on_commit_callbacks(execute=False) as queued, pytest.raises(QuotaExceeded) as refused:
        services.submission_confirm(user=submitter.user, submission_id=str(drafts[3].id))
    assert not queued
    assert refused.value.status_code == 429 and refused.value.code == "confirm_quota"
    assert "confirmed 3 runs in the last 24 hours; the limit is 3 a day" in refused.value.detail
    assert Submission.objects.get(id=drafts[3].id).status == "draft"  # kept, not lost
    # Confirming again what is already queued is no new question, and other users have their own day.
    services.submission_confirm(user=submitter.user, submission_id=str(drafts[0].id))
    services.submission_confirm(user=other_user.user, submission_id=str(draft(other_user.user, catalog["seed42"]).id))
    # A day later the place frees up.
    Submission.objects.filter(owner=submitter.user, confirmed_at__isnull=False).update(
        confirmed_at=timezone.now() - timedelta(hours=25))
    assert services.submission_confirm(user=submitter.user, submission_id=str(drafts[3].id)).status == "queued"


def test_the_confirm_page_shows_the_refusal(catalog, submitter, settings):
    settings.CONFIRMS_PER_DAY_LIMIT = 1
    first, second = draft(submitter.user, catalog["seed42"]), draft(submitter.user, catalog["seed42"])
    client = Client()
    client.force_login(submitter.user)
    client.post(f"/submit/submissions/{first.id}/confirm")
    page = client.post(f"/submit/submissions/{second.id}/confirm", follow=True).content.decode()
    assert "the limit is 1 a day" in page
    assert Submission.objects.get(id=second.id).status == "draft"


def test_a_bundle_with_too_many_results_is_refused_at_confirm(catalog, submitter, settings):
    settings.RESULTS_PER_BUNDLE_LIMIT = 25
    many = draft(submitter.user, catalog["seed42"], attempts=2)  # 5 tasks x 4 levels x 2 attempts = 40
    with pytest.raises(QuotaExceeded) as refused:
        services.submission_confirm(user=submitter.user, submission_id=str(many.id))
    assert refused.value.code == "too_many_results"
    assert "This bundle has 40 results; the Portal scores at most 25 per bundle" in refused.value.detail
    assert Submission.objects.get(id=many.id).status == "draft"
    fine = draft(submitter.user, catalog["seed42"])  # 20 results
    assert services.submission_confirm(user=submitter.user, submission_id=str(fine.id)).status == "queued"


def test_confirmed_attempts_are_shown_to_reviewers_and_on_the_public_board(catalog, submitter, other_user,
                                                                           maintainer):
    scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], agent="other", model="gpt-x"))
    runs = [scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], agent="codex", model="gpt-x"))
            for _ in range(3)]
    scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"], agent="codex", model="gpt-x"))
    # Confirmed after the published run: it could not have informed it, and is outside the row's window.
    scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], agent="later", model="gpt-x"))
    draft(submitter.user, catalog["seed42"], agent="codex")  # never confirmed: not an attempt
    review.run_review_publish(submission_id=runs[-1].id, actor=maintainer.user, display_name="Codex")

    board = Client().get("/api/v1/leaderboard").json()["rows"]
    assert [(r["display_name"], r["confirmed_attempts"]) for r in board] == [("Codex", 3)]
    # The board's attempts column is the attempt ledger's: every scoring the owner confirmed on the dataset,
    # whatever its labels (the "other" agent's run too), never another owner's, up to the row's own.
    assert [r["scored_attempts"] for r in board] == [4]
    page = Client().get("/leaderboard/").content.decode()
    assert '<td class="num" data-testid="scored-attempts"' in page and ">4</td>" in page
    rows = list(csv.DictReader(io.StringIO(Client().get("/leaderboard/export.csv").content.decode())))
    assert (rows[0]["confirmed_attempts"], rows[0]["scored_attempts"]) == ("3", "4")

    reviewer = Client()
    reviewer.force_login(maintainer.user)
    detail = reviewer.get(f"/leaderboard/review/{runs[0].id}/").content.decode()
    assert 'data-testid="confirmed-attempts">3 runs of this configuration' in detail
    queue = reviewer.get("/leaderboard/review/?tab=all").content.decode()
    assert queue.count('data-testid="confirmed-attempts"') == 6
    assert sorted(queue.split('data-testid="confirmed-attempts">')[k][0] for k in range(1, 7)) == \
        ["1", "1", "1", "3", "3", "3"]


def test_all_users_confirms_share_a_daily_site_budget(catalog, submitter, other_user, maintainer, settings):
    settings.CONFIRMS_PER_DAY_SITE = 2
    pages = {}
    for persona in (submitter, other_user, maintainer):
        pages[persona.email] = Client()
        pages[persona.email].force_login(persona.user)

    def confirm(persona) -> tuple[Submission, str]:
        run = draft(persona.user, catalog["seed42"])
        page = pages[persona.email].post(f"/submit/submissions/{run.id}/confirm", follow=True)
        return Submission.objects.get(id=run.id), page.content.decode()

    assert confirm(submitter)[0].status == "queued"
    assert confirm(other_user)[0].status == "queued"
    # A fresh account has its own per-user quota, but not its own share of the site's.
    third = _make_persona("carol@new.example")
    pages[third.email] = Client()
    pages[third.email].force_login(third.user)
    refused, page = confirm(third)
    assert refused.status == "draft"
    assert "The Portal has taken its 2 confirms for the last 24 hours (all users together)." in page
    assert "This draft stays; confirm it after" in page
    with pytest.raises(QuotaExceeded) as exc:
        services.submission_confirm(user=third.user, submission_id=str(refused.id))
    assert exc.value.status_code == 429 and exc.value.code == "site_confirm_budget"
    # Maintainers are exempt, and their confirms leave the budget alone.
    assert confirm(maintainer)[0].status == "queued"
    Submission.objects.filter(owner=submitter.user).update(confirmed_at=timezone.now() - timedelta(hours=25))
    assert services.submission_confirm(user=third.user, submission_id=str(refused.id)).status == "queued"


def _make_persona(email: str):
    from allauth.account.models import EmailAddress

    from portal.accounts.models import User
    from tests.support import PASSWORD, Persona

    user = User.objects.create_user(email=email, password=PASSWORD)
    EmailAddress.objects.create(user=user, email=email, verified=True, primary=True)
    return Persona(user=user, email=email)
