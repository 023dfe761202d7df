"""Accounts are free, so every scoring quota per account needs a verified address behind it: signing
in waits for the e-mailed link, and tokens, device approvals, uploads and confirms refuse an
unverified address (sessions and tokens from before included) with a message that says what to do."""

import re
from datetime import timedelta

import pytest
from allauth.account.models import EmailAddress
from django.core import mail
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from portal.accounts.models import CliToken, DeviceAuthorization, User
from portal.submissions.models import Submission
from tests.support import PASSWORD, issue_token

pytestmark = pytest.mark.django_db
VERIFY_FIRST = "Verify your e-mail address first: follow the link we sent to"


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    cache.clear()


@pytest.fixture
def unverified(submitter):
    """Alice, whose address is not verified (an account from before verification was mandatory)."""
    EmailAddress.objects.filter(user=submitter.user).update(verified=False)
    return submitter


def logged_in(persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def test_signing_up_signs_in_only_after_the_emailed_link(db, client: Client):
    response = client.post("/accounts/signup/", {"email": "newcomer@uni.example", "password1": PASSWORD,
                                                 "password2": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/accounts/confirm-email/"
    assert "_auth_user_id" not in client.session
    assert client.get("/submit/settings").status_code == 302  # to the login page
    login = client.post("/accounts/login/", {"login": "newcomer@uni.example", "password": PASSWORD})
    assert "_auth_user_id" not in client.session and login["Location"] == "/accounts/confirm-email/"

    link = re.search(r"http://testserver(/accounts/confirm-email/[^\s]+/)", mail.outbox[-1].body)
    assert link and mail.outbox[-1].to == ["newcomer@uni.example"]
    client.post(link.group(1))
    assert EmailAddress.objects.get(email="newcomer@uni.example").verified
    client.post("/accounts/login/", {"login": "newcomer@uni.example", "password": PASSWORD})
    page = client.post("/submit/settings", {"name": "laptop", "scope": "submit"})
    assert page.status_code == 200 and b"asi_pat_" in page.content


def test_an_unverified_user_cannot_create_a_token(unverified):
    browser = logged_in(unverified)
    page = browser.post("/submit/settings", {"name": "laptop", "scope": "submit"})
    text = page.content.decode()
    assert f"{VERIFY_FIRST} alice@uni.example. No mail? Send it again from /accounts/email/." in text
    assert CliToken.objects.count() == 0
    # Every page says so, with allauth's resend page a click away.
    banner = browser.get("/submit/dashboard").content.decode().split('data-testid="verify-email">')[1]
    assert "follow the link we sent to alice@uni.example" in banner and 'href="/accounts/email/"' in banner


def test_verified_users_see_no_banner(submitter):
    assert 'data-testid="verify-email"' not in logged_in(submitter).get("/submit/dashboard").content.decode()


def test_an_unverified_user_cannot_approve_a_device_login(unverified, client: Client):
    grant = client.post("/api/v1/cli/device-code", {}, content_type="application/json").json()
    browser = logged_in(unverified)
    page = browser.post("/submit/activate", {"code": grant["user_code"], "decision": "approve"})
    assert page.status_code == 403 and VERIFY_FIRST in page.content.decode()
    assert DeviceAuthorization.objects.get().status == "pending"
    polled = client.post("/api/v1/cli/device-token", {"device_code": grant["device_code"]},
                         content_type="application/json")
    assert polled.json()["error"] == "authorization_pending" and CliToken.objects.count() == 0
    # Not a wrong code: refusing it does not spend the user's guesses.
    for _ in range(6):
        browser.post("/submit/activate", {"code": grant["user_code"], "decision": "approve"})
    EmailAddress.objects.filter(user=unverified.user).update(verified=True)
    done = browser.post("/submit/activate", {"code": grant["user_code"], "decision": "approve"})
    assert done.status_code == 200 and DeviceAuthorization.objects.get().status == "approved"


def test_an_unverified_user_cannot_upload_with_a_token_from_before(submitter, client: Client):
    token = issue_token(submitter.user)
    EmailAddress.objects.filter(user=submitter.user).update(verified=False)
    response = client.generic("POST", "/api/v1/submissions/bundle", b"junk", content_type="application/gzip",
                              HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 403
    body = response.json()
    assert body["code"] == "email_unverified" and body["detail"].startswith(VERIFY_FIRST)
    assert body["resend_url"] == "/accounts/email/"
    assert Submission.objects.count() == 0


def test_an_unverified_user_cannot_upload_in_the_browser(unverified):
    from django.core.files.uploadedfile import SimpleUploadedFile

    page = logged_in(unverified).post("/submit/submit-results",
                                      {"bundle": SimpleUploadedFile("run.tar.gz", b"junk")})
    assert page.status_code == 403 and VERIFY_FIRST in page.content.decode()
    assert Submission.objects.count() == 0


def test_an_unverified_user_cannot_confirm(submitter):
    from tests.leaderboard.factories import make_catalog

    instance = make_catalog()["seed42"][0]
    draft = Submission.objects.create(owner=submitter.user, dataset_id="seed42", archive="submissions/x",
                                      archive_sha256="a" * 64, archive_bytes=1,
                                      expires_at=timezone.now() + timedelta(days=1))
    draft.entries.create(base_name=f"{instance.instance_id}__b1", instance=instance, task_id=instance.task_id,
                         prompt_level="b1")
    EmailAddress.objects.filter(user=submitter.user).update(verified=False)
    page = logged_in(submitter).post(f"/submit/submissions/{draft.id}/confirm", follow=True)
    assert VERIFY_FIRST in page.content.decode()
    assert Submission.objects.get(id=draft.id).status == "draft"


def test_a_user_without_any_address_record_is_unverified(db):
    user = User.objects.create_user(email="root@asibench.example", password=PASSWORD)
    page = Client()
    page.force_login(user)
    assert VERIFY_FIRST in page.post("/submit/settings", {"name": "x", "scope": "submit"}).content.decode()
