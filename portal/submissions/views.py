from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import filesizeformat
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from portal.errors import NotFound, PortalError
from portal.guides.faq import help_path
from portal.pages import AuthedRequest, act_and_redirect, action_confirmed, confirm_first_page, not_found_page
from portal.public_urls import public_url
from portal.submissions import selectors, services
from portal.submissions.apis import UploadThrottle
from portal.uploads import upload_limit

T = TypeVar("T")


@login_required
def dashboard(request: AuthedRequest) -> HttpResponse:
    return render(request, "submissions/dashboard.html", selectors.dashboard_context(request.user))


@login_required
def dashboard_live(request: AuthedRequest) -> HttpResponse:
    """The dashboard's runs table alone, for the page's live updater (portal/static/portal/live.js)."""
    return render(request, "submissions/_runs_table.html", selectors.dashboard_context(request.user))


@upload_limit(lambda: settings.BUNDLE_MAX_COMPRESSED_BYTES, refusal_code="too_large")
@login_required
@require_http_methods(["GET", "POST"])
def upload_page(request: AuthedRequest) -> HttpResponse:
    error, status, help_url = None, 422, None
    throttle = UploadThrottle()
    if request.method == "POST" and not throttle.allow_request(request, None):  # type: ignore[arg-type]
        error, status, help_url = throttle.refusal(), 429, help_path("throttled")
    elif request.method == "POST":
        upload = request.FILES.get("bundle")
        if upload is None:
            error = "Choose a .tar.gz bundle made by `asibench submit --no-upload`."
        else:
            try:
                with upload.open("rb") as stream:
                    result = services.submission_intake(
                        user=request.user, stream=stream, content_length=upload.size, filename=upload.name
                    )
            except PortalError as exc:
                error, status, help_url = exc.detail, exc.status_code, help_path(exc.code)
            else:
                run_url = public_url(f"/submit/submissions/{result.submission.id}", request)
                say = messages.success if result.created else messages.info
                say(request, services.intake_message(result.submission, result.created, run_url))
                return redirect("submission-detail", submission_id=result.submission.id)
    return render(request, "submissions/upload.html", {"error": error, "help_url": help_url},
                  status=status if error else 200)


def _report(request: AuthedRequest, submission_id: str, template: str, with_evidence: bool = False,
            **extra: object) -> HttpResponse:
    try:
        submission = services.submission_get_for(user=request.user, submission_id=submission_id)
    except NotFound as exc:
        return not_found_page(request, exc)
    return render(request, template, {**selectors.submission_report_context(submission, viewer=request.user,
                                                                            with_evidence=with_evidence), **extra})


# The run page's query flag for "your Confirm came back as a GET": see submission_confirm.
CONFIRM_AGAIN = "again"


@login_required
def submission_detail(request: AuthedRequest, submission_id: str) -> HttpResponse:
    return _report(request, submission_id, "submissions/detail.html", with_evidence=True,
                   confirm_again=request.GET.get("confirm") == CONFIRM_AGAIN)


@login_required
def submission_live(request: AuthedRequest, submission_id: str) -> HttpResponse:
    """The run page's status, progress and scores alone, for the page's live updater."""
    return _report(request, submission_id, "submissions/_live.html")


@login_required
@require_http_methods(["GET", "POST"])
def submission_confirm(request: AuthedRequest, submission_id: str) -> HttpResponse:
    if request.method == "GET":
        # A Confirm pressed after the session expired went through the login page, which can only
        # send the browser back here with a GET. Confirming needs the owner's own POST, so show the
        # run with a note to press Confirm again (never a bare 405, never a confirm from a link).
        return redirect(f"{reverse('submission-detail', args=[submission_id])}?confirm={CONFIRM_AGAIN}")
    # The run page's live status says "in the scoring queue" for as long as it is; a message only
    # when no worker is alive to take it.
    return _act(request, submission_id, services.submission_confirm, services.confirm_message)


@login_required
@require_http_methods(["GET", "POST"])
def submission_withdraw(request: AuthedRequest, submission_id: str) -> HttpResponse:
    """Withdrawing deletes the bundle: a GET (or a POST without the confirmation) asks first."""
    if action_confirmed(request):
        return _act(request, submission_id, services.submission_withdraw, "Draft withdrawn; its bundle was deleted.")
    try:
        submission = services.submission_get_owned(user=request.user, submission_id=submission_id)
    except NotFound as exc:
        return not_found_page(request, exc)
    run_page = reverse("submission-detail", args=[submission_id])
    if submission.status != submission.Status.DRAFT:
        return redirect(run_page)  # nothing left to withdraw; the run page says what it is
    return confirm_first_page(
        request, title="Withdraw this draft?", question=f"Withdraw the draft {submission.id}?",
        consequence=(f"Its bundle ({submission.filename or 'unnamed'}, {filesizeformat(submission.archive_bytes)}) "
                     "is deleted from the Portal and the run can no longer be confirmed. To score it later you "
                     "upload the bundle again."),
        action_label="Withdraw and delete the bundle", cancel_url=run_page)


@login_required
@require_http_methods(["POST"])
def finding_answer(request: AuthedRequest, submission_id: str, finding_id: int) -> HttpResponse:
    """The owner answers a scanner finding (an appeal); back to the finding on the run page."""
    return act_and_redirect(
        request, lambda: services.finding_answer(user=request.user, submission_id=submission_id,
                                                 finding_id=finding_id, answer=request.POST.get("answer", "")),
        then=lambda: redirect(f"{reverse('submission-detail', args=[submission_id])}#finding-{finding_id}"),
        success="Answer sent; a maintainer will read it.")


def _act(request: AuthedRequest, submission_id: str, action: Callable[..., T],
         success: str | Callable[[T], str | None] | None) -> HttpResponse:
    return act_and_redirect(request, lambda: action(user=request.user, submission_id=submission_id),
                            then=lambda: redirect("submission-detail", submission_id=submission_id), success=success)
