from django.conf import settings
from django.http import HttpRequest


def public_url(path: str, request: HttpRequest | None = None) -> str:
    """Absolute URL of `path` for links we print or mail; ASIBENCH_PUBLIC_URL wins behind proxies.

    Without that setting the request's host is used, and without a request (mails sent from
    tasks) the bare path is all we can honestly give.
    """
    if settings.PUBLIC_BASE_URL:
        return settings.PUBLIC_BASE_URL.rstrip("/") + path
    return request.build_absolute_uri(path) if request is not None else path
