"""Every e-mail the Portal sends goes through here.

A mail failure is logged and reported as False, never raised: a mail server outage must not undo
the decision, publication or scoring that wanted to tell someone about it.
"""

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction

logger = logging.getLogger(__name__)


def mail_send(*, to: str, subject: str, body: str) -> bool:
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [to])
    except Exception:  # SMTP, DNS, TLS, a misconfigured backend: all logged with the traceback
        logger.exception("could not e-mail %s: %s", to, subject)
        return False
    return True


def mail_send_on_commit(*, to: str, subject: str, body: str) -> None:
    """Send once the current transaction commits, so a rolled-back action mails nobody."""
    transaction.on_commit(lambda: mail_send(to=to, subject=subject, body=body))
