from urllib.parse import urlsplit, urlunsplit

from django.conf import settings
from django.core import checks
from django.http import HttpRequest

# Where links point when neither ASIBENCH_PUBLIC_URL nor a request says: `make run`'s default address.
LOCAL_BASE_URL = "http://127.0.0.1:8000"


def site_base_url(request: HttpRequest | None = None) -> str:
    """The Portal's address without a trailing slash: ASIBENCH_PUBLIC_URL (which wins behind proxies),
    else the request's, else (a mail sent by a worker on a server that did not say) LOCAL_BASE_URL."""
    if settings.PUBLIC_BASE_URL:
        return settings.PUBLIC_BASE_URL
    if request is not None:
        return request.build_absolute_uri("/").rstrip("/")
    return LOCAL_BASE_URL


def public_url(path: str, request: HttpRequest | None = None) -> str:
    """Absolute URL of `path` (which starts with "/") for links we print or mail."""
    return site_base_url(request) + path


def public_url_rebased(url: str, request: HttpRequest | None = None) -> str:
    """A link to this site that someone else built from the request's host (allauth), moved onto
    `site_base_url`. Links to other sites stay as they are."""
    parts = urlsplit(url)
    own = urlsplit(request.build_absolute_uri("/")) if request is not None else None
    if parts.netloc and (own is None or (parts.scheme, parts.netloc) != (own.scheme, own.netloc)):
        return url
    return public_url(urlunsplit(("", "", parts.path or "/", parts.query, parts.fragment)), request)


def public_url_check(app_configs: object = None, **kwargs: object) -> list[checks.CheckMessage]:
    """`manage.py check --deploy`: production says where it is, or mails sent by workers link to LOCAL_BASE_URL."""
    if settings.PUBLIC_BASE_URL:
        return []
    return [checks.Warning(
        f"ASIBENCH_PUBLIC_URL is not set: links in mails sent by workers point at {LOCAL_BASE_URL}.",
        hint="Set ASIBENCH_PUBLIC_URL to the Portal's public address, e.g. https://asibench.example.",
        id="portal.W001")]
