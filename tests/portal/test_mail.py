"""portal/mail.py: mails go out, and a mail server outage is logged instead of raised or hidden."""

import logging

from django.core import mail

from portal.mail import mail_send, mail_send_on_commit
from tests.support import free_port


def test_it_sends_one_plain_mail_from_the_default_sender_in_the_sites_name(settings):
    settings.PUBLIC_BASE_URL = "https://asibench.example"
    assert mail_send(to="alice@uni.example", subject="Scored", body="B1 90") is True
    assert [(m.to, m.subject, m.body, m.from_email) for m in mail.outbox] == [
        (["alice@uni.example"], "[ASI-Bench Portal] Scored",
         "Hello from ASI-Bench Portal!\n\nB1 90\n\nThank you for using ASI-Bench Portal!\nhttps://asibench.example\n",
         settings.DEFAULT_FROM_EMAIL)]


def test_an_unreachable_mail_server_is_logged_not_raised(settings, caplog):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", free_port(), 5  # nothing listens
    with caplog.at_level(logging.ERROR, logger="portal.mail"):
        assert mail_send(to="alice@uni.example", subject="Scored", body="B1 90") is False
    [record] = caplog.records
    assert record.getMessage() == "could not e-mail alice@uni.example: Scored"
    assert record.exc_info is not None and issubclass(record.exc_info[0], OSError)


def test_on_commit_mail_waits_for_the_commit(db, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        mail_send_on_commit(to="alice@uni.example", subject="Decision", body="accepted")
        assert mail.outbox == []
    assert len(callbacks) == 1 and [m.subject for m in mail.outbox] == ["[ASI-Bench Portal] Decision"]
