from allauth.core.internal import ratelimit
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from portal.accounts import services
from portal.accounts.forms import CliTokenCreateForm, DeviceCodeForm, DeviceDecisionForm
from portal.accounts.selectors import cli_token_get, cli_token_list
from portal.errors import PortalError
from portal.pages import AuthedRequest, action_confirmed, confirm_first_page, form_refusal


@login_required
@require_http_methods(["GET", "POST"])
def settings_page(request: AuthedRequest) -> HttpResponse:
    issued = None
    form = CliTokenCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            issued = services.cli_token_create(user=request.user, **form.cleaned_data)
        except PortalError as exc:
            form_refusal(form, exc)
        else:
            form = CliTokenCreateForm()
    # The plaintext is rendered in this one response only (no redirect, no session copy).
    response = render(
        request,
        "accounts/settings.html",
        {"form": form, "issued": issued, "tokens": cli_token_list(user=request.user)},
    )
    response["Cache-Control"] = "no-store"
    return response


TOKENS_SECTION = "/submit/settings#cli-tokens"


@login_required
@require_http_methods(["GET", "POST"])
def token_revoke(request: AuthedRequest, token_id: str) -> HttpResponse:
    """Revoking logs out every client using the token: a GET (or a POST without the confirmation) asks first."""
    try:
        if action_confirmed(request):
            token = services.cli_token_revoke(user=request.user, token_id=token_id)
            messages.success(request, f"Token “{token.name}” revoked. The CLI can no longer use it.")
            return redirect(TOKENS_SECTION)
        token = cli_token_get(user=request.user, token_id=token_id)
    except PortalError as exc:
        return render(request, "portal/error.html", {"message": exc.detail}, status=exc.status_code)
    if token.revoked_at is not None:
        return redirect(TOKENS_SECTION)  # nothing left to revoke; the list says "revoked"
    return confirm_first_page(
        request, title="Revoke this token?", question=f"Revoke the CLI token “{token.name}” ({token.prefix}…)?",
        consequence=("Every asibench client that uses it is logged out at once and cannot upload, confirm or "
                     "pull with it again. This cannot be undone; you can create a new token afterwards."),
        action_label="Revoke the token", cancel_url=TOKENS_SECTION)


# Wrong codes count against the user and the client address (ACCOUNT_RATE_LIMITS["device_activate"]);
# GETs count too, since `?code=` looks a code up. allauth's limiter is pinned with allauth itself.
_ACTIVATE_LIMIT = {"app": "allauth.account", "action": "device_activate", "limit_get": True}
_TOO_MANY_CODES = "Too many wrong codes. Wait a few minutes, then start the login again in your terminal."


def _guesses_exhausted(request: AuthedRequest) -> bool:
    return ratelimit.consume(request, user=request.user, dry_run=True, **_ACTIVATE_LIMIT) is None


def _wrong_code(request: AuthedRequest, form: DeviceCodeForm, message: str) -> HttpResponse:
    ratelimit.consume(request, user=request.user, **_ACTIVATE_LIMIT)
    return render(request, "accounts/activate.html", {"form": form, "error": message})


@login_required
@require_http_methods(["GET", "POST"])
def activate_page(request: AuthedRequest) -> HttpResponse:
    """Device login: enter (or follow a link with) the code, then approve or deny."""
    code = request.POST.get("code") or request.GET.get("code")
    if code and _guesses_exhausted(request):
        return render(request, "accounts/activate.html", {"form": DeviceCodeForm(), "error": _TOO_MANY_CODES},
                      status=429)
    if request.method == "POST" and "decision" in request.POST:
        decision = DeviceDecisionForm(request.POST)
        if decision.is_valid():
            try:
                grant = services.device_grant_decide(
                    user=request.user,
                    user_code=decision.cleaned_data["code"],
                    approve=decision.cleaned_data["decision"] == "approve",
                )
            except services.EmailUnverified as exc:  # not a wrong code: no guess is counted
                return render(request, "accounts/activate.html", {"form": DeviceCodeForm(), "error": exc.detail},
                              status=exc.status_code)
            except PortalError as exc:
                return _wrong_code(request, DeviceCodeForm(), exc.detail)
            return render(request, "accounts/activate_done.html", {"grant": grant})
    form = DeviceCodeForm(initial={"code": code} if code else None)
    if code:
        try:
            grant = services.device_grant_pending_for_code(code)
        except PortalError as exc:
            return _wrong_code(request, form, exc.detail)
        return render(request, "accounts/activate_confirm.html", {"grant": grant})
    return render(request, "accounts/activate.html", {"form": form})
