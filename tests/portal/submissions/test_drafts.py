"""Draft report, Confirm, withdraw and expiry; drafts are private to their owner (and maintainers)."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from django.utils import timezone

from portal.submissions import services
from portal.submissions.models import Submission
from tests.support import bundle_of

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def reference_archive(run_results, tmp_path_factory) -> Path:
    return bundle_of(run_results["reference"], tmp_path_factory.mktemp("bundles") / "reference.tar.gz")


@pytest.fixture
def draft(submit_catalog, submitter, db, reference_archive) -> Submission:
    with reference_archive.open("rb") as stream:
        return services.submission_intake(user=submitter.user, stream=stream, content_length=None,
                                          filename="reference.tar.gz").submission


def logged_in(persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def test_the_owner_reads_the_report(draft, submitter):
    page = logged_in(submitter).get(f"/submit/submissions/{draft.id}")
    assert page.status_code == 200
    html = page.content.decode()
    assert "every file matches the manifest" in html
    assert "demo-model" in html and "linux_ns" in html
    assert "2 of 2 tasks in seed42 have results" in html
    assert 'data-testid="confirm"' in html
    assert "Every result carries all declared outputs." in html


def test_other_users_get_404_and_maintainers_can_read_but_not_confirm(draft, other_user, maintainer):
    stranger = logged_in(other_user)
    assert stranger.get(f"/submit/submissions/{draft.id}").status_code == 404
    assert stranger.post(f"/submit/submissions/{draft.id}/confirm").status_code == 404
    assert stranger.post(f"/submit/submissions/{draft.id}/withdraw").status_code == 404
    reviewer = logged_in(maintainer)
    page = reviewer.get(f"/submit/submissions/{draft.id}")
    assert page.status_code == 200 and 'data-testid="confirm"' not in page.content.decode()
    assert reviewer.post(f"/submit/submissions/{draft.id}/confirm").status_code == 404
    assert Submission.objects.get(id=draft.id).status == "draft"
    assert Client().get(f"/submit/submissions/{draft.id}").status_code == 302


def test_confirm_queues_once_however_often_it_is_pressed(draft, submitter, django_capture_on_commit_callbacks):
    owner = logged_in(submitter)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        first = owner.post(f"/submit/submissions/{draft.id}/confirm")
        second = owner.post(f"/submit/submissions/{draft.id}/confirm")
    assert first.status_code == second.status_code == 302
    assert len(callbacks) == 1, "scoring is enqueued exactly once"
    run = Submission.objects.get(id=draft.id)
    assert run.status == "queued" and run.confirmed_at is not None and run.expires_at is None


def test_confirm_needs_a_post_with_csrf(draft, submitter):
    owner = Client(enforce_csrf_checks=True)
    owner.force_login(submitter.user)
    # A GET (what a login redirect turns a Confirm into) shows the run and asks for Confirm again.
    again = owner.get(f"/submit/submissions/{draft.id}/confirm")
    assert again.status_code == 302 and again["Location"] == f"/submit/submissions/{draft.id}?confirm=again"
    assert owner.post(f"/submit/submissions/{draft.id}/confirm").status_code == 403
    assert Submission.objects.get(id=draft.id).status == "draft"


def test_withdraw_deletes_the_bundle_and_blocks_confirm(draft, submitter):
    owner = logged_in(submitter)
    owner.post(f"/submit/submissions/{draft.id}/withdraw", {"confirmed": "yes"})
    run = Submission.objects.get(id=draft.id)
    assert run.status == "withdrawn"
    assert not default_storage.exists(run.archive)
    owner.post(f"/submit/submissions/{draft.id}/confirm")
    assert Submission.objects.get(id=draft.id).status == "withdrawn"
    assert "was withdrawn" in owner.get(f"/submit/submissions/{draft.id}").content.decode()


def test_unconfirmed_drafts_expire(draft, submitter, reference_archive):
    Submission.objects.filter(id=draft.id).update(expires_at=timezone.now() - timedelta(minutes=1))
    assert services.drafts_expire() == 1
    run = Submission.objects.get(id=draft.id)
    assert run.status == "expired" and not default_storage.exists(run.archive)
    assert services.drafts_expire() == 0
    with reference_archive.open("rb") as stream:
        again = services.submission_intake(user=submitter.user, stream=stream, content_length=None)
    assert again.created and again.submission.id != draft.id


def test_the_dashboard_lists_only_my_runs(draft, submitter, other_user):
    assert str(draft.id) in logged_in(submitter).get("/submit/dashboard").content.decode()
    assert str(draft.id) not in logged_in(other_user).get("/submit/dashboard").content.decode()


def test_the_upload_page_runs_the_same_verification(submit_catalog, submitter, db, reference_archive):
    owner = logged_in(submitter)
    with reference_archive.open("rb") as handle:
        response = owner.post("/submit/submit-results", {"bundle": handle})
    assert response.status_code == 302
    run = Submission.objects.get(owner=submitter.user)
    assert response["Location"] == f"/submit/submissions/{run.id}"
    bad = owner.post("/submit/submit-results", {"bundle": open(__file__, "rb")})
    assert bad.status_code == 422
    assert "Bundle refused (not_gzip)" in bad.content.decode()
    assert Submission.objects.filter(owner=submitter.user).count() == 1
