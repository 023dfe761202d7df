from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from portal.accounts.models import CliToken, DeviceAuthorization


@pytest.fixture(autouse=True)
def _fresh_rate_limits(settings):
    settings.DEVICE_CODE_POLL_INTERVAL = 1
    cache.clear()


def start(client: Client) -> dict:
    response = client.post(
        "/api/v1/cli/device-code", {"client_name": "asibench-cli", "scope": "submit"}, content_type="application/json"
    )
    assert response.status_code == 200
    return response.json()


def poll(client: Client, device_code: str):
    return client.post("/api/v1/cli/device-token", {"device_code": device_code}, content_type="application/json")


def age_last_poll(seconds: float = 5) -> None:
    DeviceAuthorization.objects.update(last_polled_at=timezone.now() - timedelta(seconds=seconds))


def test_start_returns_everything_the_client_needs(db, client: Client):
    grant = start(client)
    assert set(grant) >= {"device_code", "user_code", "verification_uri", "verification_uri_complete", "interval",
                          "expires_in"}
    assert grant["verification_uri"] == "http://testserver/submit/activate"
    assert grant["verification_uri_complete"].endswith(f"?code={grant['user_code']}")
    assert len(grant["device_code"]) >= 32
    assert DeviceAuthorization.objects.get().device_code_hash != grant["device_code"]


def test_polling_before_approval_is_pending_and_too_fast_is_slow_down(db, client: Client):
    grant = start(client)
    first = poll(client, grant["device_code"])
    assert first.status_code == 400
    assert first.json()["detail"] == "authorization_pending"
    assert first.json()["error"] == "authorization_pending"
    second = poll(client, grant["device_code"])
    assert second.json()["detail"] == "slow_down"
    assert DeviceAuthorization.objects.get().interval == 6


def test_approval_in_the_browser_yields_a_token_exactly_once(submitter, client: Client):
    grant = start(client)
    browser = Client()
    browser.force_login(submitter.user)
    confirm = browser.get(f"/submit/activate?code={grant['user_code']}")
    assert b"asibench-cli" in confirm.content and b"Approve" in confirm.content
    done = browser.post("/submit/activate", {"code": grant["user_code"].lower().replace("-", ""),
                                             "decision": "approve"})
    assert b"Approved" in done.content
    age_last_poll()
    redeemed = poll(client, grant["device_code"])
    assert redeemed.status_code == 200
    body = redeemed.json()
    assert body["access_token"].startswith("asi_pat_")
    assert body["user"]["email"] == submitter.email
    token = CliToken.objects.get()
    assert token.user_id == submitter.user.id and token.scope == "submit" and token.client_name == "asibench-cli"
    me = Client().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {body['access_token']}")
    assert me.status_code == 200
    age_last_poll()
    again = poll(client, grant["device_code"])
    assert again.json()["detail"] == "expired_token"
    assert CliToken.objects.count() == 1


def test_a_denied_code_never_yields_a_token(submitter, client: Client):
    grant = start(client)
    browser = Client()
    browser.force_login(submitter.user)
    browser.post("/submit/activate", {"code": grant["user_code"], "decision": "deny"})
    age_last_poll()
    assert poll(client, grant["device_code"]).json()["detail"] == "access_denied"
    assert CliToken.objects.count() == 0
    # A denied code cannot be approved afterwards.
    late = browser.post("/submit/activate", {"code": grant["user_code"], "decision": "approve"})
    assert b"unknown or has expired" in late.content
    assert DeviceAuthorization.objects.get().status == "denied"


def test_an_expired_code_cannot_be_approved_or_redeemed(submitter, client: Client):
    grant = start(client)
    DeviceAuthorization.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    browser = Client()
    browser.force_login(submitter.user)
    page = browser.post("/submit/activate", {"code": grant["user_code"], "decision": "approve"})
    assert b"unknown or has expired" in page.content
    assert poll(client, grant["device_code"]).json()["detail"] == "expired_token"
    assert CliToken.objects.count() == 0


def test_unknown_device_codes_and_bad_bodies_are_refused(db, client: Client):
    assert poll(client, "dc_nope").json()["detail"] == "invalid_grant"
    empty = client.post("/api/v1/cli/device-token", {}, content_type="application/json")
    assert empty.status_code == 400 and empty.json()["detail"] == "invalid_request"


def test_the_approval_page_requires_a_signed_in_user(db, client: Client):
    grant = start(client)
    response = Client().get(f"/submit/activate?code={grant['user_code']}")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_device_code_requests_are_rate_limited(db, client: Client, settings):
    limit = int(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["device_code"].split("/")[0])
    statuses = [
        client.post("/api/v1/cli/device-code", {}, content_type="application/json").status_code
        for _ in range(limit + 1)
    ]
    assert statuses[:limit] == [200] * limit
    assert statuses[-1] == 429
    assert DeviceAuthorization.objects.count() == limit


def test_scopes_other_than_submit_are_refused(db, client: Client):
    response = client.post("/api/v1/cli/device-code", {"scope": "admin"}, content_type="application/json")
    assert response.status_code == 400
    assert "Unsupported scope" in response.json()["detail"]
