"""Error reports to Sentry (sentry-sdk with its Django and Celery integrations), on when SENTRY_DSN is set.

No personal data leaves: no user, no cookies, headers, bodies or query strings, no local variables, the
URL reduced to its route (reset and confirmation keys live in paths), and e-mail addresses in messages
replaced. Errors only: no performance tracing."""

import re
from typing import Any

EMAIL = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
REDACTED = "[email]"
# The headers a report keeps: what helps to read an error and says nothing about who sent the request.
KEPT_HEADERS = {"content-type", "content-length", "accept", "x-asibench-filename"}


def _redact(text: Any) -> Any:
    return EMAIL.sub(REDACTED, text) if isinstance(text, str) else text


def scrub(event: dict[str, Any], hint: dict[str, Any] | None = None) -> dict[str, Any]:
    """Sentry's before_send: what the SDK's own no-PII mode leaves, minus anything that could name a person."""
    event.pop("user", None)
    extra = event.get("extra")
    if isinstance(extra, dict):
        extra.pop("sys.argv", None)  # a management command's arguments may name a person
    request = event.get("request")
    if isinstance(request, dict):
        for key in ("cookies", "data", "query_string", "env"):
            request.pop(key, None)
        headers = request.get("headers") or {}
        request["headers"] = {k: v for k, v in headers.items() if k.lower() in KEPT_HEADERS}
        if "url" in request:
            base = re.match(r"^[a-z]+://[^/]+", str(request["url"]))
            route = event.get("transaction") or ""
            request["url"] = (base.group(0) if base else "") + (route if route.startswith("/") else "")
    for exception in (event.get("exception") or {}).get("values") or []:
        exception["value"] = _redact(exception.get("value"))
        for frame in (exception.get("stacktrace") or {}).get("frames") or []:
            frame.pop("vars", None)
    logentry = event.get("logentry")
    if isinstance(logentry, dict):
        logentry["message"] = _redact(logentry.get("message"))
        logentry["formatted"] = _redact(logentry.get("formatted"))
        logentry.pop("params", None)
    if "message" in event:
        event["message"] = _redact(event["message"])
    for crumb in (event.get("breadcrumbs") or {}).get("values") or []:
        crumb["message"] = _redact(crumb.get("message"))
        crumb.pop("data", None)
    return event


def error_reporting_start(*, dsn: str, environment: str) -> None:
    import sentry_sdk
    from sentry_sdk.integrations.celery import CeleryIntegration
    from sentry_sdk.integrations.django import DjangoIntegration

    sentry_sdk.init(
        dsn=dsn,
        environment=environment or None,
        integrations=[DjangoIntegration(transaction_style="url"), CeleryIntegration()],
        send_default_pii=False,
        max_request_body_size="never",
        include_local_variables=False,
        traces_sample_rate=0,
        before_send=scrub,  # type: ignore[arg-type]
    )
