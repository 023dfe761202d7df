"""Reads for accounts."""

from allauth.account.models import EmailAddress
from allauth.mfa.models import Authenticator
from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet

from portal.accounts.models import MAINTAINERS_GROUP, CliToken, User
from portal.errors import NotFound


def user_is_maintainer(user: User | AnonymousUser) -> bool:
    if not getattr(user, "is_authenticated", False):
        return False
    if getattr(user, "is_superuser", False):
        return True
    return user.groups.filter(name=MAINTAINERS_GROUP).exists()


# What counts as a second factor: an authenticator app or a security key. Recovery codes come with the
# first of these and stand in for it, so they are no second factor on their own.
SECOND_FACTORS = (Authenticator.Type.TOTP, Authenticator.Type.WEBAUTHN)


def second_factor_missing(user: User | AnonymousUser) -> bool:
    """A maintainer without a second factor yet: they publish, reject, rescore and read judge replies, so
    until they enrol one they reach only the enrolment pages, and their CLI tokens are refused."""
    return user_is_maintainer(user) and not Authenticator.objects.filter(user_id=user.pk,
                                                                          type__in=SECOND_FACTORS).exists()


def user_email_verified(user: User | AnonymousUser) -> bool:
    """Whether the address the user signs in with is verified (allauth's EmailAddress)."""
    if not isinstance(user, User):
        return False
    return EmailAddress.objects.filter(user=user, email__iexact=user.email, verified=True).exists()


def cli_token_list(*, user: User) -> QuerySet[CliToken]:
    return CliToken.objects.filter(user=user).order_by("-created_at")


def cli_token_get(*, user: User, token_id: str) -> CliToken:
    """One of `user`'s tokens; NotFound for anyone else's (never 403: no probing)."""
    token = CliToken.objects.filter(id=token_id, user=user).first()
    if token is None:
        raise NotFound("No such token.")
    return token


def user_public_profile(user: User) -> dict[str, str]:
    """What /api/v1/me returns. The client stores all of it locally: never add secrets."""
    return {
        "id": str(user.id),
        "primary_email": user.email,
        "email": user.email,
        "display_name": user.shown_name,
    }
