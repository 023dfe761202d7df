"""allauth's mails (verification, password reset, account notices) in the Portal's name and with links
to its public address: allauth would otherwise name the site after the request's host:port
(django.contrib.sites is not installed) and link to whatever host the request came in on."""

from typing import Any

from allauth.account.adapter import DefaultAccountAdapter

from portal.mail import mail_site, mail_subject
from portal.public_urls import public_url_rebased


class PortalAccountAdapter(DefaultAccountAdapter):
    def format_email_subject(self, subject: str) -> str:
        return mail_subject(subject)

    def send_mail(self, template_prefix: str, email: str, context: dict[str, Any]) -> None:
        # allauth puts every link it mails in a context value named *_url (activate_url, password_reset_url,
        # signup_url, ...), built from the request's host.
        links = {key: public_url_rebased(value, self.request) for key, value in context.items()
                 if key.endswith("_url") and isinstance(value, str)}
        super().send_mail(template_prefix, email, {**context, **links, "current_site": mail_site(self.request)})
