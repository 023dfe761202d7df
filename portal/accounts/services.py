"""Writes for accounts: CLI tokens, device-code grants, roles."""

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth.models import Group
from django.db import transaction
from django.utils import timezone

from portal.accounts.models import MAINTAINERS_GROUP, CliToken, DeviceAuthorization, User
from portal.accounts.selectors import cli_token_get, second_factor_missing, user_email_verified
from portal.errors import NotFound, PermissionDenied, PortalError, ValidationFailed

TOKEN_PREFIX = "asi_pat_"
# allauth's page listing the user's addresses, with "Re-send verification".
EMAIL_PAGE = "/accounts/email/"
# Consonants only: codes are typed by hand and must not spell words or confuse 0/O, 1/I.
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
# What a CLI token may do. `read` tokens only read (check the login, list a draft's files);
# uploading runs and syncing proposals needs `submit`. The device flow asks for `submit`.
READ_SCOPE = "read"
SUBMIT_SCOPE = "submit"
TOKEN_SCOPES = {SUBMIT_SCOPE: "Submit (upload runs and task proposals)", READ_SCOPE: "Read-only"}


def hash_secret(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class IssuedToken:
    token: CliToken
    plaintext: str  # shown once, never stored


class EmailUnverified(PermissionDenied):
    code = "email_unverified"


def user_require_verified_email(*, user: User) -> None:
    """Tokens, device approvals, uploads and confirms need a verified address: sign-ups are free, and
    each account is one more scoring quota. (Signing in already needs one when verification is
    mandatory; this also holds for sessions and tokens from before, and for `optional`.)"""
    if not user_email_verified(user):
        raise EmailUnverified(
            f"Verify your e-mail address first: follow the link we sent to {user.email}. "
            f"No mail? Send it again from {EMAIL_PAGE}.",
            extra={"resend_url": EMAIL_PAGE},
        )


def cli_token_create(
    *, user: User, name: str, expires_in_days: int | None = None, scope: str = "submit", client_name: str = ""
) -> IssuedToken:
    user_require_verified_email(user=user)
    name = name.strip()
    if not name:
        raise ValidationFailed("A token needs a name.")
    if len(name) > 100:
        raise ValidationFailed("Token names are at most 100 characters.")
    if expires_in_days is not None and not 1 <= expires_in_days <= 3650:
        raise ValidationFailed("Expiry must be between 1 and 3650 days.")
    if scope not in TOKEN_SCOPES:
        raise ValidationFailed(f"Unknown token scope {scope[:40]!r}: use one of {', '.join(sorted(TOKEN_SCOPES))}.")
    plaintext = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = CliToken.objects.create(
        user=user,
        name=name,
        prefix=plaintext[:12],
        token_hash=hash_secret(plaintext),
        scope=scope,
        client_name=client_name,
        expires_at=timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None,
    )
    return IssuedToken(token=token, plaintext=plaintext)


def cli_tokens_revoke_all(*, user: User) -> int:
    """Revoke every live CLI token of `user` (after a password change, on request). Returns how many."""
    return CliToken.objects.filter(user=user, revoked_at__isnull=True).update(revoked_at=timezone.now())


def cli_token_revoke(*, user: User, token_id: str) -> CliToken:
    token = cli_token_get(user=user, token_id=token_id)
    if token.revoked_at is None:
        CliToken.objects.filter(id=token.id, revoked_at__isnull=True).update(revoked_at=timezone.now())
        token.refresh_from_db()
    return token


class TokenRejected(PortalError):
    status_code = 401
    code = "authentication_failed"


def cli_token_authenticate(plaintext: str) -> CliToken:
    """Resolve a bearer token or raise TokenRejected with the specific reason."""
    if not plaintext.startswith(TOKEN_PREFIX) or len(plaintext) < 20:
        raise TokenRejected("Malformed token: CLI tokens start with 'asi_pat_'.")
    token = CliToken.objects.select_related("user").filter(token_hash=hash_secret(plaintext)).first()
    if token is None:
        raise TokenRejected("Invalid token.")
    if token.revoked_at is not None:
        raise TokenRejected("This token has been revoked.")
    if token.expires_at is not None and token.expires_at <= timezone.now():
        raise TokenRejected("This token has expired.")
    if not token.user.is_active:
        raise TokenRejected("This account is disabled.")
    if second_factor_missing(token.user):
        raise TokenRejected("Maintainer accounts need a second factor: sign in on the Portal and set one up "
                            "(/accounts/2fa/); your tokens work again once you have.")
    now = timezone.now()
    # Record use at most once a minute, so authenticated requests do not all write.
    if token.last_used_at is None or now - token.last_used_at > timedelta(minutes=1):
        CliToken.objects.filter(id=token.id).update(last_used_at=now)
    return token


# --- device-code login (RFC 8628) ---------------------------------------------------------


@dataclass(frozen=True)
class DeviceGrant:
    grant: DeviceAuthorization
    device_code: str  # plaintext, returned to the device once


class DeviceFlowError(PortalError):
    """An RFC 8628 error: ``code`` is the protocol's error string, echoed in ``detail``."""

    def __init__(self, code: str, description: str):
        super().__init__(code, code=code, extra={"error": code, "error_description": description})


def _new_user_code() -> str:
    raw = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(8))
    return f"{raw[:4]}-{raw[4:]}"


def normalise_user_code(value: str) -> str:
    letters = "".join(ch for ch in value.upper() if ch.isalnum())
    return f"{letters[:4]}-{letters[4:]}" if len(letters) == 8 else value.strip().upper()


def device_grant_start(*, client_name: str, scope: str) -> DeviceGrant:
    client_name = (client_name or "asibench-cli").strip()[:80]
    scope = (scope or SUBMIT_SCOPE).strip()[:40]
    if scope not in TOKEN_SCOPES:
        raise ValidationFailed(f"Unsupported scope {scope!r}: use one of {', '.join(sorted(TOKEN_SCOPES))}.")
    device_code = "dc_" + secrets.token_urlsafe(32)
    now = timezone.now()
    for _ in range(5):
        user_code = _new_user_code()
        if not DeviceAuthorization.objects.filter(user_code=user_code, status="pending").exists():
            break
    grant = DeviceAuthorization.objects.create(
        device_code_hash=hash_secret(device_code),
        user_code=user_code,
        client_name=client_name,
        scope=scope,
        interval=settings.DEVICE_CODE_POLL_INTERVAL,
        created_at=now,
        expires_at=now + timedelta(seconds=settings.DEVICE_CODE_TTL_SECONDS),
    )
    return DeviceGrant(grant=grant, device_code=device_code)


def device_grant_pending_for_code(user_code: str) -> DeviceAuthorization:
    grant = DeviceAuthorization.objects.filter(
        user_code=normalise_user_code(user_code), status=DeviceAuthorization.Status.PENDING
    ).first()
    if grant is None or grant.is_expired:
        raise NotFound("That code is unknown or has expired. Start the login again in your terminal.")
    return grant


def device_grant_decide(*, user: User, user_code: str, approve: bool) -> DeviceAuthorization:
    grant = device_grant_pending_for_code(user_code)
    if approve:
        user_require_verified_email(user=user)
    new_status = DeviceAuthorization.Status.APPROVED if approve else DeviceAuthorization.Status.DENIED
    claimed = DeviceAuthorization.objects.filter(id=grant.id, status=DeviceAuthorization.Status.PENDING).update(
        status=new_status, user=user, decided_at=timezone.now()
    )
    if not claimed:
        raise NotFound("That code was already used.")
    grant.refresh_from_db()
    return grant


def device_grant_redeem(*, device_code: str) -> tuple[IssuedToken, User]:
    """One poll of the device. Returns a fresh token exactly once, else raises the RFC error."""
    refusal: DeviceFlowError | None = None
    with transaction.atomic():
        # The row lock serialises concurrent polls, so a grant is redeemed at most once.
        grant = (
            DeviceAuthorization.objects.select_for_update()
            .filter(device_code_hash=hash_secret(device_code or ""))
            .first()
        )
        if grant is None:
            raise DeviceFlowError("invalid_grant", "Unknown device code.")
        now = timezone.now()
        if grant.status == DeviceAuthorization.Status.DENIED:
            raise DeviceFlowError("access_denied", "The request was denied in the browser.")
        if grant.status == DeviceAuthorization.Status.REDEEMED or grant.is_expired:
            raise DeviceFlowError("expired_token", "This device code has expired or was already used.")
        too_fast = grant.last_polled_at is not None and now - grant.last_polled_at < timedelta(
            seconds=grant.interval
        )
        grant.last_polled_at = now
        if too_fast:
            grant.interval += 5
            refusal = DeviceFlowError("slow_down", f"Polling too fast; wait {grant.interval} s between polls.")
        elif grant.status == DeviceAuthorization.Status.PENDING:
            refusal = DeviceFlowError("authorization_pending", "Waiting for approval in the browser.")
        if refusal is not None:
            grant.save(update_fields=["last_polled_at", "interval"])
        else:
            assert grant.user is not None
            # A token minted by a browser click expires by default; the user can make a longer
            # one deliberately on the settings page.
            user = grant.user
            issued = cli_token_create(
                user=user,
                name=f"{grant.client_name} (device login {now:%Y-%m-%d %H:%M})",
                scope=grant.scope,
                client_name=grant.client_name,
                expires_in_days=settings.DEVICE_LOGIN_TOKEN_DAYS,
            )
            grant.status = DeviceAuthorization.Status.REDEEMED
            grant.token = issued.token
            grant.save(update_fields=["last_polled_at", "status", "token"])
    if refusal is not None:
        raise refusal
    return issued, user


# --- roles ---------------------------------------------------------------------------------


def maintainers_group_ensure() -> Group:
    group, _ = Group.objects.get_or_create(name=MAINTAINERS_GROUP)
    return group


def user_make_maintainer(*, user: User) -> User:
    user.groups.add(maintainers_group_ensure())
    return user


def demo_maintainer_ensure(*, email: str, password: str | None) -> tuple[User, str | None]:
    """Create the demo maintainer once. Returns the generated password if one was made."""
    existing = User.objects.filter(email=email.lower()).first()
    if existing is not None:
        user_make_maintainer(user=existing)
        return existing, None
    generated = None
    if not password:
        generated = password = secrets.token_urlsafe(12)
    user = User.objects.create_user(email=email, password=password, display_name="Demo maintainer")
    user_make_maintainer(user=user)
    EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
    return user, generated
