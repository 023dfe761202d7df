from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from portal.accounts.models import CliToken
from portal.accounts.services import cli_token_create, cli_token_revoke, hash_secret
from portal.errors import NotFound


def bearer(token: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def test_it_stores_only_a_hash_and_shows_a_prefix(submitter):
    issued = cli_token_create(user=submitter.user, name="laptop")
    assert issued.plaintext.startswith("asi_pat_") and len(issued.plaintext) >= 40
    row = CliToken.objects.get()
    assert row.token_hash == hash_secret(issued.plaintext)
    assert issued.plaintext not in {row.token_hash, row.prefix, row.name}
    assert row.prefix == issued.plaintext[:12]


def test_me_returns_the_public_profile(submitter, client: Client):
    issued = cli_token_create(user=submitter.user, name="laptop")
    response = client.get("/api/v1/me", **bearer(issued.plaintext))
    assert response.status_code == 200
    body = response.json()
    assert body == {
        "id": str(submitter.user.id),
        "primary_email": submitter.email,
        "email": submitter.email,
        "display_name": "Alice",
    }
    assert CliToken.objects.get().last_used_at is not None


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, "Authentication credentials were not provided."),
        ("Bearer", "Malformed Authorization header"),
        ("Bearer a b", "Malformed Authorization header"),
        ("Bearer not-a-token-at-all", "Malformed token"),
        ("Bearer asi_pat_" + "x" * 40, "Invalid token."),
    ],
)
def test_it_refuses_missing_or_malformed_tokens_with_a_clear_detail(db, client: Client, header, message):
    extra = {"HTTP_AUTHORIZATION": header} if header else {}
    response = client.get("/api/v1/me", **extra)
    assert response.status_code == 401
    assert message in response.json()["detail"]
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_it_refuses_a_revoked_token(submitter, client: Client):
    issued = cli_token_create(user=submitter.user, name="laptop")
    cli_token_revoke(user=submitter.user, token_id=str(issued.token.id))
    response = client.get("/api/v1/me", **bearer(issued.plaintext))
    assert response.status_code == 401
    assert response.json()["detail"] == "This token has been revoked."


def test_it_refuses_an_expired_token(submitter, client: Client):
    issued = cli_token_create(user=submitter.user, name="ci", expires_in_days=30)
    CliToken.objects.filter(id=issued.token.id).update(expires_at=timezone.now() - timedelta(seconds=1))
    response = client.get("/api/v1/me", **bearer(issued.plaintext))
    assert response.status_code == 401
    assert response.json()["detail"] == "This token has expired."


def test_a_user_cannot_revoke_someone_elses_token(submitter, other_user, client: Client):
    issued = cli_token_create(user=submitter.user, name="laptop")
    with pytest.raises(NotFound):
        cli_token_revoke(user=other_user.user, token_id=str(issued.token.id))
    client.force_login(other_user.user)
    response = client.post(f"/submit/settings/tokens/{issued.token.id}/revoke", {"confirmed": "yes"})
    assert response.status_code == 404
    assert client.get(f"/submit/settings/tokens/{issued.token.id}/revoke").status_code == 404
    assert CliToken.objects.get().revoked_at is None


def test_the_settings_page_shows_the_token_once_and_only_my_tokens(submitter, other_user, client: Client):
    cli_token_create(user=other_user.user, name="bobs-secret-machine")
    client.force_login(submitter.user)
    created = client.post("/submit/settings", {"name": "laptop", "expires_in_days": ""})
    assert created.status_code == 200
    html = created.content.decode()
    assert 'id="cli-tokens"' in html
    plaintext = created.context["issued"].plaintext
    assert plaintext in html
    assert created["Cache-Control"] == "no-store"
    later = client.get("/submit/settings").content.decode()
    assert plaintext not in later
    assert plaintext[:12] in later
    assert "bobs-secret-machine" not in later


def test_the_settings_page_requires_login(db, client: Client):
    response = client.get("/submit/settings")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_revoking_from_the_page_stops_the_token(submitter, client: Client):
    issued = cli_token_create(user=submitter.user, name="laptop")
    client.force_login(submitter.user)
    response = client.post(f"/submit/settings/tokens/{issued.token.id}/revoke", {"confirmed": "yes"})
    assert response.status_code == 302
    api = Client()
    assert api.get("/api/v1/me", **bearer(issued.plaintext)).status_code == 401


def test_a_token_never_reaches_the_logs(submitter, client: Client, caplog):
    issued = cli_token_create(user=submitter.user, name="laptop")
    with caplog.at_level("DEBUG"):
        client.get("/api/v1/me", **bearer(issued.plaintext))
        client.get("/api/v1/me", **bearer(issued.plaintext[:-2] + "zz"))
    assert issued.plaintext not in caplog.text


def test_repeated_failed_logins_are_rate_limited(submitter, client: Client):
    from django.core.cache import cache

    cache.clear()
    pages = [client.post("/accounts/login/", {"login": submitter.email, "password": f"wrong-{i}"})
             for i in range(7)]
    assert pages[0].status_code == 200 and b"Too many failed login attempts" not in pages[0].content
    assert any(b"Too many failed login attempts" in p.content or p.status_code == 429 for p in pages[5:])
    cache.clear()


def test_token_checks_are_throttled_per_user(submitter, client: Client, settings):
    from django.core.cache import cache
    from rest_framework.settings import api_settings
    from rest_framework.throttling import SimpleRateThrottle

    cache.clear()
    rates = {**api_settings.DEFAULT_THROTTLE_RATES, "token_check": "3/min"}
    original = SimpleRateThrottle.THROTTLE_RATES
    SimpleRateThrottle.THROTTLE_RATES = rates
    try:
        issued = cli_token_create(user=submitter.user, name="laptop")
        statuses = [client.get("/api/v1/me", **bearer(issued.plaintext)).status_code for _ in range(4)]
    finally:
        SimpleRateThrottle.THROTTLE_RATES = original
        cache.clear()
    assert statuses == [200, 200, 200, 429]
