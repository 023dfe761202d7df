"""The one DRF exception handler: every API error is ``{"detail": "...", "code": "..."}``.

A code the refusals FAQ explains also gets ``help_url``, the address of its entry. Fields are only
ever added: the official client reads ``detail`` (and prints the raw body).
"""

from typing import Any

from rest_framework.response import Response
from rest_framework.views import exception_handler

from portal.errors import PortalError
from portal.guides.faq import help_path
from portal.public_urls import public_url


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, PortalError):
        return Response({"detail": exc.detail, "code": exc.code, **exc.extra, **_help(exc.code, context)},
                        status=exc.status_code)
    response = exception_handler(exc, context)
    if response is not None and isinstance(response.data, dict) and "detail" in response.data:
        detail = response.data["detail"]
        code = getattr(detail, "code", "error")
        response.data = {"detail": str(detail), "code": code, **_help(code, context)}
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


def _help(code: str, context: dict[str, Any]) -> dict[str, str]:
    path = help_path(code)
    return {"help_url": public_url(path, context.get("request"))} if path else {}
