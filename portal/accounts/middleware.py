"""Maintainers sign in with a second factor: one who has none yet reaches only the enrolment pages."""

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect

from portal.accounts.selectors import second_factor_missing

ENROLMENT_PAGE = "/accounts/2fa/"
# Where such a maintainer may still go: allauth's second-factor pages (the authenticator app, security
# keys, recovery codes), the re-authentication they ask for, signing out, and what every page loads.
_OPEN = (ENROLMENT_PAGE, "/accounts/reauthenticate/", "/accounts/logout/", "/static/", "/healthz")


class MaintainerSecondFactorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated or request.path.startswith(_OPEN):
            return self.get_response(request)
        if not second_factor_missing(user):
            return self.get_response(request)
        why = ("Maintainer accounts need a second factor: set up an authenticator app (or a security key) "
               "before anything else.")
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": f"{why} Sign in on the Portal: {ENROLMENT_PAGE}",
                                 "code": "second_factor_required"}, status=403)
        messages.warning(request, why, extra_tags="second_factor_required")
        return redirect(ENROLMENT_PAGE)
