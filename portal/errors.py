"""One error vocabulary for the whole Portal.

Services raise these; `portal.api_errors` and the web views turn them into one JSON shape
(``{"detail": "...", "code": "..."}``) that the official client reads.
"""

from typing import Any


class PortalError(Exception):
    """A refusal the user can act on: it carries a specific message and an HTTP status."""

    status_code = 400
    code = "invalid"

    def __init__(self, detail: str, *, code: str | None = None, extra: dict[str, Any] | None = None):
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.extra = extra or {}


class ValidationFailed(PortalError):
    pass


class NotFound(PortalError):
    status_code = 404
    code = "not_found"


class PermissionDenied(PortalError):
    status_code = 403
    code = "permission_denied"


class Conflict(PortalError):
    status_code = 409
    code = "conflict"


class PayloadTooLarge(PortalError):
    status_code = 413
    code = "too_large"


class QuotaExceeded(PortalError):
    """A per-user allowance is used up; the message says which and when it frees up."""

    status_code = 429
    code = "quota_exceeded"


class ServiceUnavailable(PortalError):
    """A service the Portal stores into (S3, the database) did not answer: nothing was kept, try again."""

    status_code = 503
    code = "storage_unavailable"
