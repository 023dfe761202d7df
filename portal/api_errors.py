"""The one DRF exception handler: every API error is ``{"detail": "...", "code": "..."}``."""

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler

from portal.errors import PortalError


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, PortalError):
        return Response({"detail": exc.detail, "code": exc.code, **exc.extra}, status=exc.status_code)
    response = exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        detail = response.data["detail"]
        response.data = {"detail": str(detail), "code": getattr(detail, "code", "error")}
    elif response is not None:
        # Field errors from serializers: flatten to one readable sentence, keep the fields.
        response.data = {"detail": _flatten(response.data), "code": "invalid", "fields": response.data}
    return response


def _flatten(data: Any) -> str:
    if isinstance(data, dict):
        return "; ".join(f"{key}: {_flatten(value)}" for key, value in data.items())
    if isinstance(data, list):
        return " ".join(_flatten(item) for item in data)
    return str(data)
