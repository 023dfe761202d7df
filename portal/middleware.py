"""Response headers every page carries.

Django's SecurityMiddleware already sends `X-Content-Type-Options: nosniff`, the
Referrer-Policy and (behind TLS) HSTS, and XFrameOptionsMiddleware sends `X-Frame-Options`;
this adds the Content-Security-Policy, which Django 5.2 does not have. The policy allows no
inline script or style at all, so author content that slips past the Markdown sanitiser still
cannot run.
"""

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        self.policy = settings.CONTENT_SECURITY_POLICY

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.policy:
            response.headers.setdefault("Content-Security-Policy", self.policy)
        return response
