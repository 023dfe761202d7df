"""Maintainers sign in with a second factor, in Chromium against a live Portal: a maintainer without one
reaches only the enrolment pages (and their CLI tokens are refused) until they set up an authenticator
app; then they sign out, sign in with a TOTP code, and again with a recovery code."""

import re

import pytest
import requests

from tests.support import PASSWORD, Persona, fresh_totp_code, issue_token, screenshot

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def new_maintainer(transactional_db: None) -> Persona:
    """A maintainer as `bootstrap_portal` or the admin makes one: a password, no second factor yet."""
    from allauth.account.models import EmailAddress

    from portal.accounts.models import User
    from portal.accounts.services import user_make_maintainer

    user = User.objects.create_user(email="nova@asibench.example", password=PASSWORD, display_name="Nova")
    EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
    user_make_maintainer(user=user)
    return Persona(user=user, email=user.email)


def sign_in_with_password(page, server, persona: Persona) -> None:
    page.goto(f"{server.url}/accounts/login/")
    page.fill("input[name=login]", persona.email)
    page.fill("input[name=password]", persona.password)
    page.click("button[type=submit]")


def second_factor_step(page, code: str) -> None:
    page.wait_for_url("**/accounts/2fa/authenticate/")
    page.fill("input[name=code]", code)
    page.click("form[action$='/2fa/authenticate/'] button[type=submit]")


def sign_out(page) -> None:
    page.click("form[action$='/accounts/logout/'] button[type=submit]")
    page.wait_for_selector("[data-testid=signed-in-as]", state="detached")


def test_a_maintainer_enrols_then_signs_in_with_a_totp_code_and_with_a_recovery_code(
        portal_server, page, new_maintainer):
    server = portal_server
    token = issue_token(new_maintainer.user)
    me = requests.get(f"{server.api}/me", headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert me.status_code == 401 and "need a second factor" in me.json()["detail"]

    sign_in_with_password(page, server, new_maintainer)
    page.wait_for_url("**/accounts/2fa/")
    assert "Maintainer accounts need a second factor" in page.inner_text("body")
    for elsewhere in ("/leaderboard/review/", "/submit/proposals/review", "/submit/settings", "/admin/"):
        page.goto(server.url + elsewhere)
        assert page.url == f"{server.url}/accounts/2fa/", (elsewhere, page.url)
    page.goto(f"{server.url}/accounts/2fa/totp/activate/")
    page.wait_for_url("**/accounts/reauthenticate/**")  # adding a factor asks for the password again
    page.fill("input[name=password]", new_maintainer.password)
    page.click("form[action*='/accounts/reauthenticate/'] button[type=submit]")
    page.wait_for_url("**/accounts/2fa/totp/activate/")
    assert page.locator("[data-testid=totp-qr] svg").count() == 1  # shown inline, within the CSP
    secret = page.input_value("#authenticator_secret")
    page.fill("input[name=code]", "000000" if fresh_totp_code(secret) != "000000" else "111111")
    page.click("form[action$='/2fa/totp/activate/'] button[type=submit]")
    assert "Incorrect code" in page.inner_text("body")
    page.fill("input[name=code]", fresh_totp_code(secret))
    page.click("form[action$='/2fa/totp/activate/'] button[type=submit]")
    page.wait_for_url(re.compile(r".*/accounts/2fa/.*"))
    page.goto(f"{server.url}/accounts/2fa/recovery-codes/")
    codes = page.input_value("#recovery_codes").split()
    assert len(codes) >= 2, page.inner_text("body")
    screenshot(page, "mfa-recovery-codes")
    page.goto(f"{server.url}/leaderboard/review/")
    assert page.url.startswith(f"{server.url}/leaderboard/review/")
    assert requests.get(f"{server.api}/me", headers={"Authorization": f"Bearer {token}"}, timeout=30).ok

    sign_out(page)
    sign_in_with_password(page, server, new_maintainer)
    second_factor_step(page, fresh_totp_code(secret))
    page.wait_for_selector("[data-testid=signed-in-as]")
    page.goto(f"{server.url}/leaderboard/review/")
    assert page.url.startswith(f"{server.url}/leaderboard/review/")

    sign_out(page)
    sign_in_with_password(page, server, new_maintainer)
    second_factor_step(page, codes[0])
    page.wait_for_selector("[data-testid=signed-in-as]")
    page.goto(f"{server.url}/submit/proposals/review")
    assert page.url == f"{server.url}/submit/proposals/review"
    screenshot(page, "mfa-signed-in-with-recovery-code")

    sign_out(page)  # a recovery code works once
    sign_in_with_password(page, server, new_maintainer)
    second_factor_step(page, codes[0])
    assert "Incorrect code" in page.inner_text("body")
    assert page.locator("[data-testid=signed-in-as]").count() == 0


def test_a_session_api_call_of_an_unenrolled_maintainer_is_refused(portal_server, new_maintainer):
    from tests.support import http_login

    session = http_login(portal_server, new_maintainer)
    answer = session.get(f"{portal_server.api}/me", timeout=30)
    assert answer.status_code == 403 and answer.json()["code"] == "second_factor_required"


def test_bootstrap_says_how_the_demo_maintainer_signs_in(transactional_db):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("bootstrap_portal", stdout=out)
    text = out.getvalue()
    assert "Demo maintainer created: maintainer@asibench.local / " in text
    assert "Maintainers sign in with a second factor: at the first sign-in the Portal shows a QR code" in text


def test_a_maintainer_can_enrol_a_security_key_and_sign_in_with_it(portal_server, page, new_maintainer):
    """WebAuthn where the browser offers it: Chromium's virtual authenticator (DevTools protocol) stands in
    for a USB key. The site is reached as localhost: a relying party id cannot be an IP address."""
    server = portal_server.url.replace("127.0.0.1", "localhost")
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send("WebAuthn.addVirtualAuthenticator", {"options": {
        "protocol": "ctap2", "transport": "usb", "hasResidentKey": True, "hasUserVerification": True,
        "isUserVerified": True, "automaticPresenceSimulation": True}})
    page.goto(f"{server}/accounts/login/")
    page.fill("input[name=login]", new_maintainer.email)
    page.fill("input[name=password]", new_maintainer.password)
    page.click("button[type=submit]")
    page.wait_for_url("**/accounts/2fa/")
    page.goto(f"{server}/accounts/2fa/webauthn/add/")
    page.wait_for_url("**/accounts/reauthenticate/**")
    page.fill("input[name=password]", new_maintainer.password)
    page.click("form[action*='/accounts/reauthenticate/'] button[type=submit]")
    page.wait_for_url("**/accounts/2fa/webauthn/add/")
    page.fill("input[name=name]", "Test key")
    page.click("#mfa_webauthn_add")
    page.wait_for_url(lambda url: "/webauthn/add/" not in url)
    page.goto(f"{server}/leaderboard/review/")
    assert page.url.startswith(f"{server}/leaderboard/review/"), page.url

    sign_out(page)
    page.goto(f"{server}/accounts/login/")
    page.fill("input[name=login]", new_maintainer.email)
    page.fill("input[name=password]", new_maintainer.password)
    page.click("button[type=submit]")
    page.wait_for_url("**/accounts/2fa/authenticate/")
    page.click("#mfa_webauthn_authenticate")
    page.wait_for_selector("[data-testid=signed-in-as]")
    page.goto(f"{server}/submit/proposals/review")
    assert page.url == f"{server}/submit/proposals/review"
