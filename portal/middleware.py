"""Response headers every page carries, and who may talk to a Portal running with DEBUG on.

Django's SecurityMiddleware already sends `X-Content-Type-Options: nosniff`, the
Referrer-Policy and (behind TLS) HSTS, and XFrameOptionsMiddleware sends `X-Frame-Options`;
this adds the Content-Security-Policy, which Django 5.2 does not have. The policy allows no
inline script or style at all, so author content that slips past the Markdown sanitiser still
cannot run.
"""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseForbidden

from portal.loopback import is_loopback_host

# Headers a proxy adds: a request carrying one came from elsewhere, whatever REMOTE_ADDR says.
_FORWARDED = ("HTTP_FORWARDED", "HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP", "HTTP_X_FORWARDED_HOST")


class DebugLoopbackOnlyMiddleware:
    """With DEBUG on, only this machine is answered (loopback, not through a proxy): any other client
    gets a plain 403, before anything could raise into Django's debug page. A server started some way
    that the start-up checks (settings, gunicorn.conf.py) do not see, such as `runserver 0.0.0.0`, is
    covered too. Off (passes everything) when DEBUG is off."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if settings.DEBUG and (not is_loopback_host(request.META.get("REMOTE_ADDR", ""))
                               or any(request.META.get(name) for name in _FORWARDED)):
            return HttpResponseForbidden(
                "This Portal runs with DEBUG on, which answers this machine only. Its operator sets DEBUG=0 "
                "to serve others.", content_type="text/plain; charset=utf-8")
        return self.get_response(request)


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        self.policy = settings.CONTENT_SECURITY_POLICY

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy:
            response.headers.setdefault("Content-Security-Policy", self.policy)
        return response
