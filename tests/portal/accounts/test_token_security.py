"""Attacks on accounts and tokens: scope, lifetime, revocation on a new password, code guessing,
throttles that a forged X-Forwarded-For cannot escape, and the admin's login form."""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from portal.accounts import services
from portal.accounts.models import CliToken
from portal.errors import ValidationFailed
from tests.support import PASSWORD


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    cache.clear()  # rate-limit counters live in the cache, which outlives each test's rollback


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_a_read_only_token_reads_but_cannot_upload_or_change(submitter, client: Client):
    read = services.cli_token_create(user=submitter.user, name="dashboard", scope="read").plaintext
    submit = services.cli_token_create(user=submitter.user, name="cluster").plaintext
    assert client.get("/api/v1/me", **bearer(read)).status_code == 200
    for method, path in (("post", "/api/v1/submissions/bundle"), ("post", "/api/v1/cli/submit"),
                         ("put", "/api/v1/proposals/abc/files")):
        refused = getattr(client, method)(path, b"", content_type="application/octet-stream", **bearer(read))
        assert refused.status_code == 403, (path, refused.content)
        assert refused.json()["code"] == "insufficient_scope"
        assert "read-only" in refused.json()["detail"]
        allowed = getattr(client, method)(path, b"", content_type="application/octet-stream", **bearer(submit))
        assert allowed.status_code != 403, (path, allowed.content)  # refused for its content, not its scope


def test_unknown_scopes_are_refused_everywhere(submitter, client: Client):
    with pytest.raises(ValidationFailed, match="Unknown token scope 'admin'"):
        services.cli_token_create(user=submitter.user, name="x", scope="admin")
    started = client.post("/api/v1/cli/device-code", {"scope": "admin"}, content_type="application/json")
    assert started.status_code == 400 and "Unsupported scope 'admin'" in started.json()["detail"]
    # A row with a scope this Portal does not know (an old or forged one) grants nothing.
    issued = services.cli_token_create(user=submitter.user, name="old")
    CliToken.objects.filter(id=issued.token.id).update(scope="legacy")
    assert client.get("/api/v1/me", **bearer(issued.plaintext)).status_code == 403


def test_the_settings_page_creates_read_only_tokens(submitter, client: Client):
    client.force_login(submitter.user)
    page = client.post("/submit/settings", {"name": "ro", "expires_in_days": "", "scope": "read"})
    assert page.status_code == 200
    assert CliToken.objects.get(name="ro").scope == "read"
    assert 'data-testid="token-scope">read<' in page.content.decode()


def test_device_login_tokens_expire_by_default(submitter, settings):
    settings.DEVICE_CODE_POLL_INTERVAL = 1
    started = services.device_grant_start(client_name="asibench-cli", scope="submit")
    services.device_grant_decide(user=submitter.user, user_code=started.grant.user_code, approve=True)
    issued, _ = services.device_grant_redeem(device_code=started.device_code)
    expected = timezone.now() + timedelta(days=settings.DEVICE_LOGIN_TOKEN_DAYS)
    assert issued.token.expires_at is not None
    assert abs((issued.token.expires_at - expected).total_seconds()) < 60
    assert settings.DEVICE_LOGIN_TOKEN_DAYS == 30


@pytest.mark.parametrize("revoke", [True, False])
def test_a_password_change_offers_to_revoke_every_cli_token(submitter, client: Client, revoke):
    for name in ("laptop", "cluster"):
        services.cli_token_create(user=submitter.user, name=name)
    client.force_login(submitter.user)
    form = client.get("/accounts/password/change/").content.decode()
    assert 'name="revoke_cli_tokens"' in form and "checked" in form.split('name="revoke_cli_tokens"')[1][:80] + \
        form.split('name="revoke_cli_tokens"')[0][-80:]
    data = {"oldpassword": PASSWORD, "password1": "a new long passphrase 77", "password2": "a new long passphrase 77"}
    if revoke:
        data["revoke_cli_tokens"] = "on"
    response = client.post("/accounts/password/change/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    live = CliToken.objects.filter(user=submitter.user, revoked_at__isnull=True).count()
    assert live == (0 if revoke else 2)


def test_guessing_device_codes_at_activate_is_throttled(submitter, client: Client):
    started = services.device_grant_start(client_name="asibench-cli", scope="submit")
    client.force_login(submitter.user)
    for k in range(5):
        wrong = client.get(f"/submit/activate?code=BBBB-BBB{'CDFGH'[k]}")
        assert wrong.status_code == 200 and b"unknown or has expired" in wrong.content
    blocked = client.get(f"/submit/activate?code={started.grant.user_code}")  # even the right one, now
    assert blocked.status_code == 429 and b"Too many wrong codes" in blocked.content
    posted = client.post("/submit/activate", {"code": started.grant.user_code, "decision": "approve"})
    assert posted.status_code == 429
    # Another user is not locked out by this one's guesses.
    other = Client()
    other.force_login(services.User.objects.create_user(email="carol@uni.example", password="x" * 20))
    assert other.get(f"/submit/activate?code={started.grant.user_code}").status_code == 200


def device_code_request(client: Client, forwarded_for: str) -> int:
    return client.post("/api/v1/cli/device-code", {}, content_type="application/json",
                       REMOTE_ADDR="10.0.0.9", HTTP_X_FORWARDED_FOR=forwarded_for).status_code


def _device_code_rate() -> int:
    from django.conf import settings

    return int(settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["device_code"].split("/")[0])


def test_throttles_key_on_the_real_client_not_a_forged_forwarded_for(db, client: Client):
    limit = _device_code_rate()
    codes = [device_code_request(client, f"203.0.113.{k}") for k in range(limit + 2)]
    assert codes[:limit] == [200] * limit and codes[limit:] == [429, 429], codes


def test_behind_one_proxy_the_client_is_the_last_forwarded_address(db, client: Client, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    limit = _device_code_rate()
    # What the attacker writes comes first; the proxy appends the address it saw.
    codes = [device_code_request(client, f"198.51.100.{k}, 192.0.2.7") for k in range(limit + 2)]
    assert codes[limit:] == [429, 429], codes
    assert device_code_request(client, "192.0.2.8") == 200  # a different real client has its own budget


def test_the_admin_login_form_goes_through_the_rate_limited_login(db, client: Client):
    from portal.accounts.models import User

    User.objects.create_superuser(email="root@asibench.example", password=PASSWORD)
    for _ in range(3):
        response = client.post("/admin/login/", {"username": "root@asibench.example", "password": PASSWORD})
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    assert "_auth_user_id" not in client.session  # the admin's own form no longer checks passwords
    pages = [client.post("/accounts/login/", {"login": "root@asibench.example", "password": "wrong"})
             for _ in range(6)]
    assert b"Too many failed login attempts" in pages[-1].content
    locked = client.post("/accounts/login/", {"login": "root@asibench.example", "password": PASSWORD})
    assert b"Too many failed login attempts" in locked.content and "_auth_user_id" not in client.session
