"""Withdraw (deletes the bundle) and Revoke token (logs every client out) never act on one click: the
button leads to an "are you sure" page (a plain GET, no JavaScript), and only that page's POST acts."""

import pytest
from django.test import Client

from portal.accounts.models import CliToken
from portal.accounts.services import cli_token_create
from portal.submissions.models import Submission
from tests.leaderboard.factories import make_catalog
from tests.portal.submissions.run_states import run_in_state
from tests.support import PASSWORD

pytestmark = pytest.mark.django_db


def logged_in(persona) -> Client:  # noqa: ANN001
    client = Client()
    client.force_login(persona.user)
    return client


@pytest.fixture
def draft(submitter):
    return run_in_state(submitter.user, make_catalog()["seed42"], "draft")


def test_the_run_pages_withdraw_is_a_link_to_the_question(draft, submitter):
    page = logged_in(submitter).get(f"/submit/submissions/{draft.id}").content.decode()
    assert f'href="/submit/submissions/{draft.id}/withdraw" data-testid="withdraw"' in page
    assert f'action="/submit/submissions/{draft.id}/withdraw"' not in page


def test_withdraw_asks_first_and_acts_only_on_the_confirmation(draft, submitter):
    owner = logged_in(submitter)
    url = f"/submit/submissions/{draft.id}/withdraw"
    question = owner.get(url)
    html = question.content.decode()
    assert question.status_code == 200 and "Withdraw the draft" in html
    assert "is deleted from the Portal" in html and 'name="confirmed" value="yes"' in html
    assert f'href="/submit/submissions/{draft.id}" data-testid="confirm-action-cancel"' in html
    assert "<script" not in html.split("<main>")[1], "works without JavaScript (and the CSP forbids inline script)"
    assert Submission.objects.get(id=draft.id).status == "draft"

    # A POST without the confirmation (an old page's one-click form) only asks again.
    again = owner.post(url)
    assert again.status_code == 200 and "Withdraw the draft" in again.content.decode()
    assert Submission.objects.get(id=draft.id).status == "draft"

    done = owner.post(url, {"confirmed": "yes"})
    assert done.status_code == 302 and done["Location"] == f"/submit/submissions/{draft.id}"
    assert Submission.objects.get(id=draft.id).status == "withdrawn"
    # Asking again about a withdrawn run has nothing to ask: back to the run.
    assert owner.get(url)["Location"] == f"/submit/submissions/{draft.id}"


def test_only_the_owner_is_asked(draft, other_user, maintainer):
    for persona in (other_user, maintainer):
        client = logged_in(persona)
        assert client.get(f"/submit/submissions/{draft.id}/withdraw").status_code == 404
        assert client.post(f"/submit/submissions/{draft.id}/withdraw", {"confirmed": "yes"}).status_code == 404
    assert Submission.objects.get(id=draft.id).status == "draft"
    assert Client().get(f"/submit/submissions/{draft.id}/withdraw").status_code == 302  # to the login page


def test_withdraw_needs_the_csrf_token(draft, submitter):
    owner = Client(enforce_csrf_checks=True)
    owner.force_login(submitter.user)
    assert owner.post(f"/submit/submissions/{draft.id}/withdraw", {"confirmed": "yes"}).status_code == 403
    assert Submission.objects.get(id=draft.id).status == "draft"


def test_revoke_asks_first_and_acts_only_on_the_confirmation(submitter):
    issued = cli_token_create(user=submitter.user, name="laptop")
    owner = logged_in(submitter)
    settings_page = owner.get("/submit/settings").content.decode()
    url = f"/submit/settings/tokens/{issued.token.id}/revoke"
    assert f'href="{url}" data-testid="revoke"' in settings_page and f'action="{url}"' not in settings_page

    question = owner.get(url).content.decode()
    assert f"Revoke the CLI token “laptop” ({issued.token.prefix}…)?" in question
    assert "logged out at once" in question and 'name="confirmed" value="yes"' in question
    assert issued.plaintext not in question
    assert owner.post(url).status_code == 200
    assert CliToken.objects.get().revoked_at is None

    done = owner.post(url, {"confirmed": "yes"})
    assert done.status_code == 302 and done["Location"] == "/submit/settings#cli-tokens"
    assert CliToken.objects.get().revoked_at is not None
    assert owner.get(url)["Location"] == "/submit/settings#cli-tokens"


def test_a_revoke_question_about_someone_elses_token_is_a_404(submitter, other_user):
    issued = cli_token_create(user=submitter.user, name="laptop")
    stranger = logged_in(other_user)
    response = stranger.get(f"/submit/settings/tokens/{issued.token.id}/revoke")
    assert response.status_code == 404 and "laptop" not in response.content.decode()


def test_a_withdraw_after_the_session_expired_asks_after_login(draft, submitter):
    browser = Client()
    to_login = browser.get(f"/submit/submissions/{draft.id}/withdraw")
    assert to_login.status_code == 302 and to_login["Location"].startswith("/accounts/login/?next=")
    signed_in = browser.post(to_login["Location"], {"login": submitter.email, "password": PASSWORD}, follow=True)
    assert signed_in.status_code == 200 and "Withdraw the draft" in signed_in.content.decode()
    assert Submission.objects.get(id=draft.id).status == "draft"
