from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from portal.errors import NotFound
from portal.guides import selectors
from portal.pages import not_found_page


def guide_index(request: HttpRequest) -> HttpResponse:
    return render(request, "guides/index.html", {"guides": selectors.guide_list()})


def guide_detail(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        guide = selectors.guide_get(slug)
    except NotFound as exc:
        return not_found_page(request, exc)
    return render(request, "guides/guide.html", {"page": selectors.guide_render(guide),
                                                 "guides": selectors.guide_list()})
