from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from portal.accounts.models import User
from portal.accounts.services import TokenRejected, cli_token_authenticate


class AuthedApiRequest(Request):
    """The request an IsAuthenticated API view receives: its user is signed in, never AnonymousUser."""

    user: User


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer asi_pat_…`, as the asibench client sends it."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[User, object] | None:
        header = authentication.get_authorization_header(request).decode("latin-1").strip()
        if not header:
            return None
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "bearer":
            return None
        value = value.strip()
        if not value or " " in value:
            raise exceptions.AuthenticationFailed("Malformed Authorization header: expected 'Bearer <token>'.")
        try:
            token = cli_token_authenticate(value)
        except TokenRejected as exc:
            raise exceptions.AuthenticationFailed(exc.detail) from None
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """How the schema describes the CLI's bearer tokens."""

    target_class = "portal.accounts.authentication.BearerTokenAuthentication"
    name = "cliToken"

    def get_security_definition(self, auto_schema: object) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "A CLI token (asi_pat_…)."}
