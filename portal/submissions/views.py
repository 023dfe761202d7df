from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from portal.errors import NotFound, PortalError
from portal.submissions import selectors, services


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    runs = selectors.submission_list_with_progress(request.user)
    return render(request, "submissions/dashboard.html", {"runs": runs, "live": any(p for _, p in runs)})


@login_required
def dashboard_live(request: HttpRequest) -> HttpResponse:
    """The dashboard's runs table alone, for the page's live updater (portal/static/portal/live.js)."""
    runs = selectors.submission_list_with_progress(request.user)
    return render(request, "submissions/_runs_table.html", {"runs": runs, "live": any(p for _, p in runs)})


@login_required
@require_http_methods(["GET", "POST"])
def upload_page(request: HttpRequest) -> HttpResponse:
    error = None
    if request.method == "POST":
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
                error = exc.detail
            else:
                messages.success(request, services.intake_message(result.submission, result.created))
                return redirect("submission-detail", submission_id=result.submission.id)
    return render(request, "submissions/upload.html", {"error": error}, status=422 if error else 200)


@login_required
def submission_detail(request: HttpRequest, submission_id: str) -> HttpResponse:
    try:
        submission = services.submission_get_for(user=request.user, submission_id=submission_id)
    except NotFound as exc:
        return render(request, "portal/error.html", {"message": exc.detail}, status=404)
    context = selectors.submission_report_context(submission, viewer=request.user)
    return render(request, "submissions/detail.html", context)


@login_required
def submission_live(request: HttpRequest, submission_id: str) -> HttpResponse:
    """The run page's status, progress and scores alone, for the page's live updater."""
    try:
        submission = services.submission_get_for(user=request.user, submission_id=submission_id)
    except NotFound as exc:
        return render(request, "portal/error.html", {"message": exc.detail}, status=404)
    context = selectors.submission_report_context(submission, viewer=request.user)
    return render(request, "submissions/_live.html", context)


@login_required
@require_POST
def submission_confirm(request: HttpRequest, submission_id: str) -> HttpResponse:
    return _act(request, submission_id, services.submission_confirm, "Confirmed: your run is in the scoring queue.")


@login_required
@require_POST
def submission_withdraw(request: HttpRequest, submission_id: str) -> HttpResponse:
    return _act(request, submission_id, services.submission_withdraw, "Draft withdrawn; its bundle was deleted.")


def _act(request: HttpRequest, submission_id: str, action, success: str) -> HttpResponse:  # type: ignore[no-untyped-def]
    try:
        action(user=request.user, submission_id=submission_id)
    except NotFound as exc:
        return render(request, "portal/error.html", {"message": exc.detail}, status=404)
    except PortalError as exc:
        messages.error(request, exc.detail)
    else:
        messages.success(request, success)
    return redirect("submission-detail", submission_id=submission_id)
