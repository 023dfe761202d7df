"""E-mail to a proposal's author (comments, decisions, publication), with the link to the proposal."""

from __future__ import annotations

from django.urls import reverse

from portal.mail import mail_send_on_commit
from portal.public_urls import public_url
from proposals.models import Proposal


def author_notify(proposal: Proposal, subject: str, body: str) -> None:
    link = public_url(reverse("proposal-detail", args=[proposal.pk]))
    mail_send_on_commit(to=proposal.owner.email, subject=subject, body=f"{body}\n\nYour proposal: {link}\n")
