"""Sign up in the browser, create a CLI token, see it once, revoke it."""

import pytest
import requests

from tests.support import screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_sign_up_create_and_revoke_a_token(portal_server, page):
    page.goto(portal_server.url + "/")
    page.click("text=Sign up")
    page.fill("input[name=email]", "newcomer@uni.example")
    page.fill("input[name=password1]", "a long enough passphrase 9")
    page.fill("input[name=password2]", "a long enough passphrase 9")
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
    page.click("text=Revoke")
    assert "revoked" in page.inner_text("#cli-tokens")
    refused = requests.get(portal_server.api + "/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
    assert refused.status_code == 401
    assert refused.json()["detail"] == "This token has been revoked."
