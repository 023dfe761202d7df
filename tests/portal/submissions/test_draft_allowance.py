"""Drafts park up to 512 MB each for days: the browser upload is throttled like the API (one budget
for both), and each user's live drafts are capped by count and by bytes, on both upload paths."""

import shutil
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import Client
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart
from django.utils import timezone

from portal.submissions.models import Submission
from tests.support import bundle_of, issue_token

pytestmark = [pytest.mark.slow]
PAGE = "/submit/submit-results"
API = "/api/v1/submissions/bundle"


@pytest.fixture(autouse=True)
def _empty_storage_and_throttles() -> Iterator[None]:
    shutil.rmtree(Path(settings.MEDIA_ROOT) / "submissions", ignore_errors=True)
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(scope="module")
def bundles(run_results, tmp_path_factory) -> dict[str, bytes]:
    base = tmp_path_factory.mktemp("bundles")
    return {name: bundle_of(run_results[name], base / f"{name}.tar.gz").read_bytes()
            for name in ("reference", "naive")}


@pytest.fixture
def upload_rate(settings) -> Iterator[object]:
    """Set the one upload rate (REST_FRAMEWORK's `bundle_upload`) for this test."""
    from rest_framework.settings import api_settings
    from rest_framework.throttling import SimpleRateThrottle

    def set_rate(rate: str) -> None:
        rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "bundle_upload": rate}
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
        api_settings.reload()
        SimpleRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES

    original = SimpleRateThrottle.THROTTLE_RATES
    yield set_rate
    SimpleRateThrottle.THROTTLE_RATES = original  # a class attribute: `settings` does not restore it


def api_upload(token: str, body: bytes):
    return Client().generic("POST", API, body, content_type="application/gzip",
                            HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_X_ASIBENCH_FILENAME="run.tar.gz")


def page_upload(client: Client, body: bytes, name: str = "run.tar.gz"):
    from django.core.files.uploadedfile import SimpleUploadedFile

    form = encode_multipart(BOUNDARY, {"bundle": SimpleUploadedFile(name, body, content_type="application/gzip")})
    return client.generic("POST", PAGE, form, content_type=MULTIPART_CONTENT)


def logged_in(persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def stored_archives() -> list[Path]:
    root = Path(settings.MEDIA_ROOT) / "submissions"
    return sorted(root.glob("*")) if root.exists() else []


def test_the_upload_page_is_throttled_and_shares_the_apis_budget(submit_catalog, submitter, db, upload_rate):
    upload_rate("3/hour")
    browser = logged_in(submitter)
    statuses = [page_upload(browser, b"junk").status_code for _ in range(3)]
    assert statuses == [422, 422, 422]
    refused = page_upload(browser, b"junk")
    assert refused.status_code == 429
    text = refused.content.decode()
    assert "Too many uploads: the limit is 3 an hour (browser and CLI together)." in text
    assert "Try again in" in text
    # The page and the API draw on one budget, so switching paths gains nothing.
    api = api_upload(issue_token(submitter.user), b"junk")
    assert api.status_code == 429 and api.json()["code"] == "throttled"
    assert browser.get(PAGE).status_code == 200  # looking at the form is not an upload
    assert Submission.objects.count() == 0 and stored_archives() == []


def test_live_drafts_are_capped_by_count_through_the_api(submit_catalog, submitter, db, settings, bundles):
    settings.DRAFTS_PER_USER = 1
    token = issue_token(submitter.user)
    first = api_upload(token, bundles["reference"])
    assert first.status_code == 201
    refused = api_upload(token, bundles["naive"])
    assert refused.status_code == 429
    assert refused.json()["code"] == "draft_quota"
    assert refused.json()["detail"] == (
        "You have 1 unconfirmed draft; the limit is 1. Confirm or withdraw one on your dashboard "
        "(or wait for it to expire), then upload again.")
    assert Submission.objects.count() == 1 and len(stored_archives()) == 1
    # The same bytes again are the same draft, not a new one: still answered.
    assert api_upload(token, bundles["reference"]).status_code == 200
    # An expired draft (not yet swept) and a withdrawn one hold no place.
    Submission.objects.filter(id=first.json()["submission_id"]).update(expires_at=timezone.now() - timedelta(1))
    assert api_upload(token, bundles["naive"]).status_code == 201


def test_live_drafts_are_capped_by_bytes_through_the_api(submit_catalog, submitter, other_user, db, settings,
                                                         bundles):
    settings.DRAFT_BYTES_PER_USER = len(bundles["reference"]) + len(bundles["naive"]) - 1
    token = issue_token(submitter.user)
    assert api_upload(token, bundles["reference"]).status_code == 201
    refused = api_upload(token, bundles["naive"])
    assert refused.status_code == 429
    body = refused.json()
    assert body["code"] == "draft_bytes_quota"
    assert body["detail"].startswith("Your unconfirmed drafts hold ")
    assert "this bundle would pass your limit of " in body["detail"]
    assert Submission.objects.count() == 1 and len(stored_archives()) == 1
    # Each user has their own allowance.
    assert api_upload(issue_token(other_user.user), bundles["naive"]).status_code == 201


def test_the_upload_page_refuses_past_the_draft_cap_and_says_why(submit_catalog, submitter, db, settings, bundles):
    settings.DRAFTS_PER_USER = 1
    browser = logged_in(submitter)
    assert page_upload(browser, bundles["reference"]).status_code == 302
    refused = page_upload(browser, bundles["naive"])
    assert refused.status_code == 429
    assert "You have 1 unconfirmed draft; the limit is 1." in refused.content.decode()
    assert Submission.objects.count() == 1 and len(stored_archives()) == 1
    draft = Submission.objects.get()
    browser.post(f"/submit/submissions/{draft.id}/withdraw", {"confirmed": "yes"})
    assert page_upload(browser, bundles["naive"]).status_code == 302
