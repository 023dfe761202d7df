"""Pages: the public board and its rows, the CSV download, the maintainers' queue and actions.

Review pages answer 404 to anyone who is not a maintainer, signed in or not: the queue's
existence is not advertised, and the services check the role again.
"""

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from contracts import PROMPT_LEVELS
from leaderboard import charts, costs, selectors, services, spot_validation
from leaderboard.exports import rows_csv
from leaderboard.figures import COLUMNS
from leaderboard.models import SpotValidation
from portal.accounts.selectors import user_is_maintainer
from portal.errors import NotFound, PortalError
from portal.guides.faq import message_tag
from portal.pages import AuthedRequest, act_and_redirect, error_page, maintainer_only, not_found_page
from portal.templatetags.portal_tags import domain_label

PAGE_SIZE = 100
QUEUE_PAGE_SIZE = 50
_COLUMN_TITLES = [("rank", "Rank"), ("name", "Run"), *[(c, c.upper() if c != "mean" else "Mean") for c in COLUMNS],
                  ("cost", "$ / task"), ("tokens", "Tokens / task"), ("coverage", "Coverage"),
                  ("attempts", "Scored attempts"), ("date", "Published")]
# The configuration is shown under each run's name (one column, so the board fits a laptop's width);
# its parts still sort the board from the Run column's header.
_CONFIGURATION_SORTS = [("agent", "agent"), ("model", "model"), ("effort", "effort"), ("sandbox", "sandbox")]


def board(request: HttpRequest) -> HttpResponse:
    datasets, domains = selectors.dataset_choices(), selectors.domain_choices()
    try:
        query = selectors.board_query_from(request.GET, datasets, lambda: domains)
    except PortalError as exc:
        return error_page(request, exc.detail, status=exc.status_code, code=exc.code)
    base = _base_params(query)
    # The table and charts are the same for every visitor: cached as HTML until the next publish.
    # The page number in the key is the one the paginator settled on, never the raw parameter.
    page_no = selectors.board_page_number(query, request.GET.get("page"), PAGE_SIZE)
    body = selectors.board_cached("html", query, lambda: _board_body(query, base, page_no), extra=(str(page_no),))
    return render(request, "leaderboard/board.html", {
        "query": query, "datasets": datasets, "domains": domains, "body": mark_safe(body),
        "show_choices": selectors.SHOW_CHOICES, "trust_legend": selectors.trust_legend(),
        "csv_url": "/leaderboard/export.csv?" + urlencode(base),
        "api_url": "/api/v1/leaderboard?" + urlencode(base),
    })


def _base_params(query: selectors.BoardQuery) -> dict[str, str]:
    """The board view's parameters other than sort and page, as links and exports carry them."""
    return {"dataset": query.dataset, **({"domain": query.domain} if query.domain else {}),
            **({"show": query.show} if query.show != "ranked" else {}),
            **({"trust": query.trust} if query.trust else {})}


def _board_body(query: selectors.BoardQuery, base: dict[str, str], page_no: int) -> str:
    rows = selectors.board_rows(query)
    page = Paginator(rows, PAGE_SIZE).get_page(page_no)

    def header(key: str, title: str) -> dict[str, Any]:
        active = key == query.sort
        flip = ("asc" if query.descending else "desc") if active else selectors.default_direction(key)
        return {"key": key, "title": title, "active": active,
                "numeric": key in COLUMNS or key in {"rank", "cost", "tokens", "coverage", "attempts"},
                "arrow": ("▼" if query.descending else "▲") if active else "",
                "url": "?" + urlencode({**base, "sort": key, "dir": flip})}

    return render_to_string("leaderboard/_board_body.html", {
        "query": query, "page": page, "rows": page.object_list, "columns": COLUMNS,
        "headers": [header(key, title) for key, title in _COLUMN_TITLES],
        "configuration_sorts": [header(key, title) for key, title in _CONFIGURATION_SORTS],
        "charts": _charts(query, rows), "total": len(rows),
        "page_query": urlencode({**base, "sort": query.sort, "dir": "desc" if query.descending else "asc"}),
        "incomplete": selectors.board_incomplete_count(query),
        "incomplete_query": urlencode({**base, "show": "incomplete"}),
        "ranked_query": urlencode({k: v for k, v in base.items() if k != "show"}),
        "attempt_window": settings.ATTEMPT_WINDOW_DAYS,
    })


def _charts(query: selectors.BoardQuery, rows: list[dict[str, Any]]) -> dict[str, Any]:
    def draw() -> dict[str, Any]:
        data = selectors.board_charts_data(rows)
        scope = f" · {domain_label(query.domain)}" if query.domain else ""
        return {"b3": charts.b3_bars(data["b3"], title=f"B3 across agents{scope}"),
                "profile": charts.level_profile(data["profile"], data["average"], title=f"Scores from B1 to B4{scope}"),
                "shown_b3": len(data["b3"]), "shown_profile": len(data["profile"]),
                "cost": _cost_chart(query, rows, "mean", limit=BOARD_COST_POINTS)}

    return selectors.board_cached("charts", query, draw, per_sort=False)


BOARD_COST_POINTS = 30
COST_VALUES = ("mean", "b3")


def _cost_chart(query: selectors.BoardQuery, rows: list[dict[str, Any]], value: str,
                limit: int | None = None) -> dict[str, Any]:
    """The cost–score chart and the table beside it: `value` (the mean or B3) against $ per task, the best
    `limit` placed runs by score (the front is the same: a run outside them cannot beat one inside)."""
    data = costs.cost_score_data(rows, value)
    points = data["points"][:limit] if limit else data["points"]
    label = "Mean" if value == "mean" else value.upper()
    scope = f" · {domain_label(query.domain)}" if query.domain else ""
    return {**data, "points": points, "shown": len(points), "placed": len(data["points"]), "label": label,
            "svg": charts.cost_score(points, value_label=label, title=f"{label} against $ per task{scope}")}


def cost_score(request: HttpRequest) -> HttpResponse:
    """The cost–score chart of a board, its table, and the runs it cannot place; cached like the board."""
    datasets, domains = selectors.dataset_choices(), selectors.domain_choices()
    try:
        query = selectors.board_query_from(request.GET, datasets, lambda: domains)
    except PortalError as exc:
        return error_page(request, exc.detail, status=exc.status_code, code=exc.code)
    value = request.GET.get("value") or "mean"
    if value not in COST_VALUES:
        value = "mean"  # an allowlist before the cache key
    cost = selectors.board_cached("cost", query, lambda: _cost_chart(query, selectors.board_rows(query), value),
                                  per_sort=False, extra=(value,))
    return render(request, "leaderboard/cost.html", {"query": query, "datasets": datasets, "domains": domains,
                                                     "value": value, "values": COST_VALUES, "cost": cost})


def heatmap(request: HttpRequest) -> HttpResponse:
    """Published configurations × tasks, as an SVG and as the table it draws; cached like the board."""
    datasets, domains = selectors.dataset_choices(), selectors.domain_choices()
    try:
        query = selectors.board_query_from(request.GET, datasets, lambda: domains)
    except PortalError as exc:
        return error_page(request, exc.detail, status=exc.status_code, code=exc.code)
    value = request.GET.get("value") or "mean"
    if value not in selectors.HEATMAP_VALUES:
        value = "mean"  # an allowlist before the cache key, as for the board's sort

    def draw() -> dict[str, Any]:
        data = selectors.heatmap_data(query, value)
        label = "Mean of B1–B4" if value == "mean" else value.upper()
        scope = f" · {domain_label(query.domain)}" if query.domain else ""
        return {**data, "svg": charts.heatmap(data["rows"], data["tasks"],
                                              title=f"{label} per task, {query.dataset}{scope}")}

    return render(request, "leaderboard/heatmap.html", {
        "query": query, "datasets": datasets, "domains": domains, "value": value,
        "values": selectors.HEATMAP_VALUES, "shown": selectors.HEATMAP_ROWS,
        "heatmap": selectors.board_cached("heatmap", query, draw, per_sort=False, extra=(value,)),
    })


def board_csv(request: HttpRequest) -> HttpResponse:
    try:
        query = selectors.board_query_from(request.GET, selectors.dataset_choices())
    except PortalError as exc:
        return HttpResponse(exc.detail, status=exc.status_code, content_type="text/plain")
    response = HttpResponse(rows_csv(selectors.board_rows(query)), content_type="text/csv; charset=utf-8")
    name = f"asibench-leaderboard-{query.dataset}{'-' + query.domain if query.domain else ''}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def entry_detail(request: HttpRequest, entry_id: int) -> HttpResponse:
    try:
        entry = selectors.entry_public_get(entry_id)
    except NotFound as exc:
        return not_found_page(request, exc)
    return render(request, "leaderboard/entry_detail.html", {**selectors.entry_public_detail(entry),
                                                             "levels": PROMPT_LEVELS})


MODERATION_PAGE_SIZE = 50


def moderation(request: HttpRequest) -> HttpResponse:
    page = Paginator(selectors.moderation_log(), MODERATION_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "leaderboard/moderation.html", {"page": page, "events": page.object_list})


# --- review (maintainers) -----------------------------------------------------------------------

@maintainer_only
def run_review_queue(request: HttpRequest) -> HttpResponse:
    tab = request.GET.get("tab") or "pending"
    if tab not in selectors.QUEUE_TABS:
        tab = "pending"
    page = Paginator(selectors.run_review_queue(tab), QUEUE_PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "leaderboard/review_queue.html", {
        "tab": tab, "tabs": selectors.QUEUE_TABS, "page": page, "levels": PROMPT_LEVELS,
        "flag_legend": selectors.flag_legend(),
        "rows": selectors.queue_rows(page.object_list),
    })


@maintainer_only
def run_review_detail(request: HttpRequest, submission_id: str) -> HttpResponse:
    try:
        submission = selectors.run_review_get(submission_id)
    except NotFound as exc:
        return not_found_page(request, exc)
    context = selectors.run_review_detail(submission)
    context["suggested_name"] = (context["review"].display_name if context["review"] and
                                 context["review"].display_name else services.suggested_display_name(submission))
    context["max_name"] = services.MAX_NAME
    context["spot_validations"] = spot_validation.spot_validations_of(submission)
    context["spot_sample"] = settings.SPOT_VALIDATION_SAMPLE
    context["spot_tolerance"] = settings.SPOT_VALIDATION_TOLERANCE
    return render(request, "leaderboard/review_detail.html", context)


def _act(request: HttpRequest, submission_id: str, action: Callable[..., Any], done: str,
         **fields: Any) -> HttpResponse:
    return act_and_redirect(request, lambda: action(submission_id=submission_id, actor=request.user, **fields),
                            then=lambda: redirect("review-detail", submission_id=submission_id), success=done)


@maintainer_only
@require_POST
def run_review_publish(request: HttpRequest, submission_id: str) -> HttpResponse:
    return _act(request, submission_id, services.run_review_publish, "Published on the leaderboard.",
                display_name=request.POST.get("display_name", ""), public_reason=request.POST.get("public_reason", ""),
                override_inputs_mismatch=request.POST.get("override_inputs_mismatch") == "1",
                override_incomplete=request.POST.get("override_incomplete") == "1")


@maintainer_only
@require_POST
def run_review_trust(request: HttpRequest, submission_id: str) -> HttpResponse:
    return _act(request, submission_id, services.entry_trust_set, "Trust label set; the moderation log says why.",
                label=request.POST.get("trust", ""), reason=request.POST.get("reason", ""))


@maintainer_only
@require_POST
def run_review_reject(request: HttpRequest, submission_id: str) -> HttpResponse:
    return _act(request, submission_id, services.run_review_reject, "Rejected; the owner has been told why.",
                reason=request.POST.get("reason", ""))


@maintainer_only
@require_POST
def run_review_rescore(request: HttpRequest, submission_id: str) -> HttpResponse:
    return _act(request, submission_id, services.run_review_rescore,
                "Rescore queued; the earlier scoring is kept for comparison.", reason=request.POST.get("reason", ""),
                rejudge=request.POST.get("rejudge") == "1")


@maintainer_only
@require_POST
def run_review_spot_draw(request: AuthedRequest, submission_id: str) -> HttpResponse:
    raw = (request.POST.get("k") or "").strip()
    k = int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 4 else None
    return act_and_redirect(
        request, lambda: spot_validation.spot_validation_draw(submission_id=submission_id, actor=request.user, k=k),
        then=lambda: redirect(f"{reverse('review-detail', args=[submission_id])}#spot-validation"),
        success=lambda v: f"Spot validation drawn: {len(v.sample)} result(s); the submitter has been told.")


@login_required
@require_POST
def spot_validation_attach(request: AuthedRequest, validation_id: int) -> HttpResponse:
    """The owner (or a maintainer, with a run they made) names the re-run of a spot validation."""
    def back() -> HttpResponse:
        validation = SpotValidation.objects.filter(id=validation_id).values_list("submission_id", flat=True).first()
        if validation is not None and user_is_maintainer(request.user):
            return redirect(f"{reverse('review-detail', args=[validation])}#spot-validation")
        return redirect(reverse("submission-detail", args=[validation]) if validation else "/")

    return act_and_redirect(
        request, lambda: spot_validation.spot_validation_attach(validation_id=validation_id, actor=request.user,
                                                                rerun_id=request.POST.get("rerun", "")),
        then=back, success=lambda v: f"Re-run attached; the spot validation is {v.get_state_display()}.")


@maintainer_only
@require_POST
def run_review_unpublish(request: HttpRequest, submission_id: str) -> HttpResponse:
    return _act(request, submission_id, services.run_review_unpublish, "Removed from the leaderboard.",
                reason=request.POST.get("reason", ""))


@maintainer_only
@require_POST
def run_review_rescan(request: HttpRequest, submission_id: str) -> HttpResponse:
    return _act(request, submission_id, services.run_review_rescan,
                "Scan queued; findings answered or decided stay.")


@maintainer_only
@require_POST
def finding_decide(request: AuthedRequest, submission_id: str, finding_id: int) -> HttpResponse:
    return act_and_redirect(
        request, lambda: services.finding_decide(submission_id=submission_id, finding_id=finding_id,
                                                 actor=request.user, decision=request.POST.get("decision", ""),
                                                 reason=request.POST.get("reason", "")),
        then=lambda: redirect(f"{reverse('review-detail', args=[submission_id])}#finding-{finding_id}"),
        success="Decided; the moderation log says so.")


def findings_line(findings: dict[str, list[tuple[str, int]]]) -> str:
    """ "abcd1234 (2 high, 1 medium); …" for the runs of a bulk selection that carry scanner findings."""
    return "; ".join(f"{run[:8]} (" + ", ".join(f"{n} {severity}" for severity, n in counts) + ")"
                     for run, counts in sorted(findings.items()))


@maintainer_only
@require_POST
def run_review_bulk(request: AuthedRequest) -> HttpResponse:
    tab = request.POST.get("tab") or "pending"
    back = redirect(f"{reverse('review-queue')}?"
                    + urlencode({"tab": tab if tab in selectors.QUEUE_TABS else "pending"}))
    try:
        outcome = services.run_review_bulk(submission_ids=request.POST.getlist("runs"), actor=request.user,
                                       action=request.POST.get("action", ""), reason=request.POST.get("reason", ""),
                                       override_incomplete=request.POST.get("override_incomplete") == "1")
    except PortalError as exc:
        messages.error(request, exc.detail, extra_tags=message_tag(exc.code))
        return back
    if outcome["done"]:
        messages.success(request, f"{request.POST.get('action')}: {len(outcome['done'])} run(s) done, each audited.")
    if outcome["incomplete"]:
        messages.warning(request, f"Incomplete among the selected runs ({len(outcome['incomplete'])}): " + "; ".join(
            f"{run[:8]} ({line})" for run, line in sorted(outcome["incomplete"].items())) + ".")
    for submission_id, why, code in outcome["refused"]:
        messages.error(request, f"{submission_id[:8]}: {why}", extra_tags=message_tag(code))
    if outcome["findings"]:
        selected = len(set(request.POST.getlist("runs")))
        messages.warning(request, f"Scanner findings stand in {len(outcome['findings'])} of the {selected} selected "
                         f"run(s): {findings_line(outcome['findings'])}.")
    else:
        messages.info(request, "None of the selected runs carries scanner findings.")
    return back
