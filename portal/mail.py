"""Every e-mail the Portal sends goes through here, or through allauth's adapter
(portal/accounts/adapter.py), which takes the same name, greeting and address from here.

A mail failure is logged and reported as False, never raised: a mail server outage must not undo
the decision, publication or scoring that wanted to tell someone about it.
"""

import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.http import HttpRequest

from portal.public_urls import site_base_url

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class MailSite:
    """What allauth's mail templates read as `current_site`: our name, and our address as the domain
    (mails print it as the link to the site, so it is the whole base URL, never a bare host:port)."""

    name: str
    domain: str


def mail_site(request: HttpRequest | None = None) -> MailSite:
    return MailSite(name=settings.SITE_NAME, domain=site_base_url(request))


def mail_subject(subject: str) -> str:
    return f"[{settings.SITE_NAME}] {subject}"


def mail_body(body: str) -> str:
    """The greeting and the sign-off every mail has, allauth's included (account/email/base_message.txt)."""
    site = mail_site()
    return f"Hello from {site.name}!\n\n{body.strip()}\n\nThank you for using {site.name}!\n{site.domain}\n"


def mail_send(*, to: str, subject: str, body: str) -> bool:
    """Send `body` (absolute links only: build them with portal.public_urls.public_url) to `to`."""
    try:
        send_mail(mail_subject(subject), mail_body(body), settings.DEFAULT_FROM_EMAIL, [to])
    except Exception:  # SMTP, DNS, TLS, a misconfigured backend: all logged with the traceback
        logger.exception("could not e-mail %s: %s", to, subject)
        return False
    return True


def mail_send_on_commit(*, to: str, subject: str, body: str) -> None:
    """Send once the current transaction commits, so a rolled-back action mails nobody."""
    transaction.on_commit(lambda: mail_send(to=to, subject=subject, body=body))
