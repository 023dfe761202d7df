from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from portal.accounts.models import CliToken
from portal.accounts.services import SUBMIT_SCOPE, TOKEN_SCOPES


class TokenScopePermission(BasePermission):
    """A CLI token acts only within its scope: a `read` token may read, never upload or change.

    Browser sessions are not tokens and are not limited here.
    """

    code = "insufficient_scope"
    message = "This CLI token is read-only (scope 'read'); create a token with the 'submit' scope to upload."

    def has_permission(self, request: Request, view: object) -> bool:
        token = request.auth
        if not isinstance(token, CliToken):
            return True
        if token.scope not in TOKEN_SCOPES:
            return False
        return request.method in SAFE_METHODS or token.scope == SUBMIT_SCOPE
