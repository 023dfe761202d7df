from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from portal.status import selectors


def status_page(request: HttpRequest) -> HttpResponse:
    return render(request, "status/status.html", {"status": selectors.status_cached()})
