"""Every mail the Portal sends, allauth's included, is in the site's name (ASIBENCH_SITE_NAME) and
carries absolute links built from one setting (ASIBENCH_PUBLIC_URL), never the host:port a request
came in on: read from the mail as sent (Django's locmem outbox) and followed."""

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.core import mail
from django.core.cache import cache
from django.test import Client

from leaderboard import services as review
from portal.submissions.scoring_runs import scoring_run_completed_hooks
from proposals.models import Proposal
from proposals.services import proposal_comment
from tests.leaderboard.factories import RunSpec, make_catalog, scored_run
from tests.support import PASSWORD, REPO, free_port, wait_for

pytestmark = pytest.mark.django_db
PUBLIC = "https://asibench.example"
# The address a request comes in on, as with `make run` before the fix: it must appear in no mail.
REQUEST_HOST = "127.0.0.1:8731"


@pytest.fixture(autouse=True)
def _public_site(settings):
    settings.PUBLIC_BASE_URL = PUBLIC
    settings.SITE_NAME = "ASI-Bench Portal"
    cache.clear()  # allauth's rate limits


def links(message) -> list[str]:  # noqa: ANN001
    return [link.rstrip(".,;:)") for link in re.findall(r"\b\w+://\S+", message.body)]


def assert_in_the_sites_name(message) -> None:  # noqa: ANN001
    assert message.subject.startswith("[ASI-Bench Portal] "), message.subject
    assert message.body.startswith("Hello from ASI-Bench Portal!"), message.body
    assert "Thank you for using ASI-Bench Portal!" in message.body
    assert REQUEST_HOST not in message.subject + message.body and "testserver" not in message.body
    assert links(message) and all(link.startswith(PUBLIC + "/") or link == PUBLIC for link in links(message)), \
        links(message)


def browser() -> Client:
    return Client(HTTP_HOST=REQUEST_HOST)


def test_the_sign_up_verification_mail(db):
    browser().post("/accounts/signup/", {"email": "newcomer@uni.example", "password1": PASSWORD,
                                         "password2": PASSWORD})
    [message] = mail.outbox
    assert_in_the_sites_name(message)
    [link] = [link for link in links(message) if "/accounts/confirm-email/" in link]
    # The link works on the site it names (here: its path on the test server).
    assert browser().post(link.removeprefix(PUBLIC)).status_code == 302
    assert Client().post("/accounts/login/", {"login": "newcomer@uni.example", "password": PASSWORD}).status_code == 302
    from allauth.account.models import EmailAddress

    assert EmailAddress.objects.get(email="newcomer@uni.example").verified


def test_the_password_reset_mail(submitter):
    browser().post("/accounts/password/reset/", {"email": submitter.email})
    [message] = mail.outbox
    assert_in_the_sites_name(message)
    [link] = [link for link in links(message) if "/accounts/password/reset/key/" in link]
    followed = browser().get(link.removeprefix(PUBLIC), follow=True)
    assert followed.status_code == 200 and b'name="password1"' in followed.content


def test_the_reset_mail_to_an_unknown_address_links_to_sign_up(db):
    browser().post("/accounts/password/reset/", {"email": "nobody@uni.example"})
    [message] = mail.outbox
    assert_in_the_sites_name(message)
    assert f"{PUBLIC}/accounts/signup/" in links(message)


def test_without_the_setting_allauth_links_follow_the_request_and_still_greet_by_name(settings, db):
    settings.PUBLIC_BASE_URL = ""
    browser().post("/accounts/signup/", {"email": "newcomer@uni.example", "password1": PASSWORD,
                                         "password2": PASSWORD})
    [message] = mail.outbox
    assert message.subject.startswith("[ASI-Bench Portal] ")
    assert message.body.startswith("Hello from ASI-Bench Portal!") and f"Hello from {REQUEST_HOST}" not in message.body
    assert any(link.startswith(f"http://{REQUEST_HOST}/accounts/confirm-email/") for link in links(message))


def test_the_site_name_is_one_setting(settings, db):
    settings.SITE_NAME = "Example Bench"
    browser().post("/accounts/password/reset/", {"email": "nobody@uni.example"})
    [message] = mail.outbox
    assert message.subject.startswith("[Example Bench] ") and message.body.startswith("Hello from Example Bench!")


@pytest.fixture
def run(submitter):
    return scored_run(RunSpec(owner=submitter.user, instances=make_catalog()["seed42"]))


def test_the_owner_mails_scored_published_and_rejected(run, maintainer, django_capture_on_commit_callbacks):
    scoring_run_completed_hooks(run.scoring_runs.get().id)
    with django_capture_on_commit_callbacks(execute=True):
        entry = review.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Claude")
    scored, published = mail.outbox
    for message in (scored, published):
        assert_in_the_sites_name(message)
        assert f"{PUBLIC}/submit/submissions/{run.id}" in links(message)
    assert scored.subject == f"[ASI-Bench Portal] Run {str(run.id)[:8]} is scored"
    assert f"{PUBLIC}/leaderboard/entries/{entry.id}/" in links(published)
    assert Client().get(f"/leaderboard/entries/{entry.id}/").status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        review.run_review_unpublish(submission_id=run.id, actor=maintainer.user, reason="to reject")
        review.run_review_reject(submission_id=run.id, actor=maintainer.user, reason="Outputs copied.")
    rejected = mail.outbox[-1]
    assert_in_the_sites_name(rejected)
    assert "Reason: Outputs copied." in rejected.body and f"{PUBLIC}/submit/submissions/{run.id}" in links(rejected)


def test_a_worker_without_the_setting_mails_make_runs_address_not_a_bare_path(run, settings):
    settings.PUBLIC_BASE_URL = ""
    scoring_run_completed_hooks(run.scoring_runs.get().id)
    [message] = mail.outbox
    assert f"http://127.0.0.1:8000/submit/submissions/{run.id}" in links(message)
    assert f"\n/submit/submissions/{run.id}" not in message.body and ": /" not in message.body


def test_the_proposal_mails(submitter, maintainer, django_capture_on_commit_callbacks):
    proposal = Proposal.objects.create(owner=submitter.user, task_id="physics.toy_spectrum", snapshot="0" * 64)
    with django_capture_on_commit_callbacks(execute=True):
        proposal_comment(user=maintainer.user, proposal_id=proposal.id, text="Please cite the paper.")
    [message] = mail.outbox
    assert_in_the_sites_name(message)
    assert message.subject == "[ASI-Bench Portal] New comment on physics.toy_spectrum"
    assert f"{PUBLIC}/submit/proposals/{proposal.id}" in links(message)


def fake_venv_tools(root: Path) -> None:
    """A gunicorn and a celery that only say which public URL they were started with, then wait to be
    stopped, beside the venv's real python that checks the port."""
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    for tool in ("gunicorn", "celery"):
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $1 ASIBENCH_PUBLIC_URL=$ASIBENCH_PUBLIC_URL"\n'
                                    "exec sleep 60\n")
        (bin_dir / tool).chmod(0o755)


@pytest.mark.parametrize(("given", "expected"), [(None, "http://127.0.0.1:{port}"),
                                                 ("https://asibench.example", "https://asibench.example")])
def test_make_run_sets_the_public_url_to_its_own_port_unless_given(tmp_path, given, expected):
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "run-portal.sh", tmp_path / "scripts" / "run-portal.sh")
    fake_venv_tools(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "ASIBENCH_PUBLIC_URL"}
    port = free_port()
    expected = expected.replace("{port}", str(port))
    env.update(PORT=str(port), ASIBENCH_VAR_DIR=str(tmp_path / "var"),
               **({"ASIBENCH_PUBLIC_URL": given} if given else {}))
    log = tmp_path / "run-portal.log"
    with log.open("w") as out:
        script = subprocess.Popen(["bash", str(tmp_path / "scripts" / "run-portal.sh")], env=env, stdout=out,
                                  stderr=subprocess.STDOUT, start_new_session=True)
    try:
        said = [f"{server} ASIBENCH_PUBLIC_URL={expected}" for server in
                ("gunicorn config.wsgi:application", "celery -A")]
        wait_for(lambda: all(line in log.read_text() for line in said), 30, "both servers to start")
        assert f"mails link to {expected};" in log.read_text()
    finally:
        os.killpg(script.pid, signal.SIGTERM)
        assert script.wait(timeout=30) == 0, log.read_text()
