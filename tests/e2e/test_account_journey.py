"""Sign up in the browser, verify the address from the mailed link, create a CLI token, see it once,
revoke it."""

import time

import pytest
import requests

from tests.support import mailed_link, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_sign_up_create_and_revoke_a_token(portal_server, page):
    started = time.time()
    page.goto(portal_server.url + "/")
    page.click("text=Sign up")
    page.fill("input[name=email]", "newcomer@uni.example")
    page.fill("input[name=password1]", "a long enough passphrase 9")
    page.fill("input[name=password2]", "a long enough passphrase 9")
    page.click("button[type=submit]")
    # Not signed in until the address is verified: the link comes by mail.
    assert page.locator("[data-testid=signed-in-as]").count() == 0
    assert "/accounts/confirm-email/" in page.url
    page.goto(mailed_link("newcomer@uni.example", "/accounts/confirm-email/", since=started - 1))
    page.click("button[type=submit]")
    page.goto(portal_server.url + "/accounts/login/")
    page.fill("input[name=login]", "newcomer@uni.example")
    page.fill("input[name=password]", "a long enough passphrase 9")
    page.click("button[type=submit]")
    assert page.inner_text("[data-testid=signed-in-as]") == "newcomer@uni.example"

    page.goto(portal_server.url + "/submit/settings#cli-tokens")
    page.fill("input[name=name]", "laptop")
    page.click("text=Create token")
    token = page.input_value("[data-testid=new-token]")
    assert token.startswith("asi_pat_")
    screenshot(page, "token-created")
    me = requests.get(portal_server.api + "/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert me.status_code == 200 and me.json()["email"] == "newcomer@uni.example"

    page.goto(portal_server.url + "/submit/settings")
    assert token not in page.content()
    assert token[:12] in page.content()
    page.click("[data-testid=revoke]")
    # One click only asks: the token still works until the confirmation is pressed.
    assert "Revoke the CLI token “laptop”" in page.inner_text("[data-testid=confirm-action]")
    assert requests.get(portal_server.api + "/me", headers={"Authorization": f"Bearer {token}"},
                        timeout=10).status_code == 200
    page.click("[data-testid=confirm-action-submit]")
    assert "revoked" in page.inner_text("#cli-tokens")
    refused = requests.get(portal_server.api + "/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert refused.status_code == 401
    assert refused.json()["detail"] == "This token has been revoked."
