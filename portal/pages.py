"""What every HTML view shares: the error page, refusals on forms, act-then-redirect, confirm-first
steps for actions that cannot be undone, maintainer-only pages.

One policy for refusals on pages: whatever a visitor may not see answers 404, be it another
user's object or a page for maintainers only, so neither is advertised. The services check
ownership and role again; these helpers only decide how a refusal looks.
"""

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.contrib import messages
from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from portal.accounts.models import User
from portal.accounts.selectors import user_is_maintainer
from portal.errors import NotFound, PortalError
from portal.guides.faq import help_path, message_tag

T = TypeVar("T")


class AuthedRequest(HttpRequest):
    """The request a `login_required` view receives: its user is signed in, never AnonymousUser."""

    user: User


def error_page(request: HttpRequest, message: str, status: int = 404, code: str | None = None) -> HttpResponse:
    """The error page; a refusal `code` with an FAQ entry gets a link to it."""
    return render(request, "portal/error.html", {"message": message, "help_url": help_path(code)}, status=status)


def not_found_page(request: HttpRequest, exc: NotFound) -> HttpResponse:
    return error_page(request, exc.detail, status=404, code=exc.code)


def form_refusal(form: Form, exc: PortalError) -> None:
    """Show a service's refusal on `form`; the template links `form.refusal_help_url`, its FAQ entry."""
    form.add_error(None, exc.detail)
    form.refusal_help_url = help_path(exc.code)  # type: ignore[attr-defined]


def act_and_redirect(request: HttpRequest, action: Callable[[], T], then: Callable[[], HttpResponse],
                     success: str | Callable[[T], str | None] | None = None) -> HttpResponse:
    """Run `action`; NotFound is the 404 page, any other refusal a message on the page `then` redirects to."""
    try:
        result = action()
    except NotFound as exc:
        return not_found_page(request, exc)
    except PortalError as exc:
        messages.error(request, exc.detail, extra_tags=message_tag(exc.code))
    else:
        said = success(result) if callable(success) else success
        if said:
            messages.success(request, said)
    return then()


# Actions that cannot be undone (withdrawing a draft deletes its bundle, revoking a token logs every
# client out) act only on a POST that carries this field, which only their "are you sure" page sends:
# the button on the page that lists them (a GET link) never acts on one click, JavaScript or not.
CONFIRMED_FIELD = "confirmed"


def action_confirmed(request: HttpRequest) -> bool:
    return request.method == "POST" and request.POST.get(CONFIRMED_FIELD) == "yes"


def confirm_first_page(request: HttpRequest, *, title: str, question: str, consequence: str, action_label: str,
                       cancel_url: str) -> HttpResponse:
    """The "are you sure" step: a form that POSTs back to this URL with the confirmation field."""
    return render(request, "portal/confirm_action.html", {
        "title": title, "question": question, "consequence": consequence, "action_label": action_label,
        "cancel_url": cancel_url, "confirmed_field": CONFIRMED_FIELD,
    })


def maintainer_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not user_is_maintainer(request.user):
            return error_page(request, "Page not found.", status=404)
        return view(request, *args, **kwargs)

    return wrapped
