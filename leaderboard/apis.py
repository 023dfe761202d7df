from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import selectors, spot_validation
from leaderboard.consistency import entry_consistency
from leaderboard.exports import entry_public, interval_method, row_public
from portal.api_schema import ErrorOutputSerializer, json_object, json_objects
from portal.pagination import page_bounds

DEFAULT_PAGE_SIZE = 100
MAX_PAGE_SIZE = 1000


def _page_bounds(params: object) -> tuple[int, int]:
    return page_bounds(params, default_limit=DEFAULT_PAGE_SIZE, max_limit=MAX_PAGE_SIZE)  # type: ignore[arg-type]


class BoardOutputSerializer(serializers.Serializer):
    dataset = serializers.CharField()
    domain = serializers.CharField(allow_blank=True)
    sort = serializers.CharField()
    dir = serializers.ChoiceField(choices=["asc", "desc"])
    show = serializers.CharField(help_text="ranked (complete runs), incomplete or all")
    trust = serializers.CharField(allow_blank=True)
    incomplete_count = serializers.IntegerField(help_text="rows left out of the ranked view for not being complete")
    trust_labels = json_objects("each trust label and what it means")
    interval = json_object("how the intervals are computed")
    count = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
    moderation = json_object("the public moderation log's newest events and where the rest are")
    rows = json_objects("the board's rows, as the page and the CSV show them")


class EntryOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    display_name = serializers.CharField()
    dataset = serializers.CharField()
    agent = serializers.CharField()
    model = serializers.CharField()
    effort = serializers.CharField()
    sandbox = serializers.CharField()
    b1 = serializers.FloatField(allow_null=True)
    b2 = serializers.FloatField(allow_null=True)
    b3 = serializers.FloatField(allow_null=True)
    b4 = serializers.FloatField(allow_null=True)
    mean = serializers.FloatField(allow_null=True)
    intervals = json_object("[low, high] per level and the mean")
    instances_scored = serializers.IntegerField()
    task_count = serializers.IntegerField()
    coverage = json_object("the valid share of the dataset's tasks × B1–B4")
    complete = serializers.BooleanField()
    trust = serializers.CharField()
    tasks = json_object("figures per task")
    usage = json_object("what the run cost and took, with sources")
    consistency = json_object("agreement with the configuration's other published runs", allow_null=True)
    published_at = serializers.DateTimeField(allow_null=True)
    scored_at = serializers.DateTimeField(allow_null=True)
    url = serializers.CharField()


class ModerationLogOutputSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    limit = serializers.IntegerField()
    offset = serializers.IntegerField()
    events = json_objects("newest first, as /leaderboard/moderation shows them")


class SpotValidationOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    run = serializers.UUIDField()
    dataset = serializers.CharField()
    state = serializers.CharField()
    seed_sha256 = serializers.CharField(help_text="committed at the draw")
    seed = serializers.IntegerField(allow_null=True, help_text="revealed once the validation is decided")
    tasks = serializers.ListField(child=serializers.CharField())
    prompt_levels = serializers.ListField(child=serializers.CharField())
    sample = json_objects("each sampled result: instance_id, task_id, prompt_level")


class LeaderboardApi(APIView):
    """The public board as JSON: published runs only, the same rows as the page and the CSV, and the
    newest events of the public moderation log."""

    permission_classes = [AllowAny]
    authentication_classes: list = []  # public and cacheable: no per-user answer

    @extend_schema(
        parameters=[OpenApiParameter("dataset", str), OpenApiParameter("domain", str),
                    OpenApiParameter("sort", str), OpenApiParameter("dir", str, enum=["asc", "desc"]),
                    OpenApiParameter("show", str, enum=list(selectors.SHOW_CHOICES)),
                    OpenApiParameter("trust", str, enum=["official", "repo-verified", "community"]),
                    OpenApiParameter("limit", int), OpenApiParameter("offset", int)],
        responses={200: BoardOutputSerializer, 404: ErrorOutputSerializer},
    )
    def get(self, request: Request) -> HttpResponse:
        limit, offset = _page_bounds(request.query_params)
        query = selectors.board_query_from(request.query_params, selectors.dataset_choices())
        # Like the HTML board: the encoded rows are the same for every visitor, so they are cached as bytes
        # until the next publish, one entry per board view whatever the limit and offset; a request only
        # slices them: no database query and no encoding of rows when warm.
        rows = selectors.board_cached("json-rows", query, lambda: [
            JSONRenderer().render(row_public(row)) for row in selectors.board_rows(query)])
        head = JSONRenderer().render({
            "dataset": query.dataset,
            "domain": query.domain,
            "sort": query.sort,
            "dir": "desc" if query.descending else "asc",
            "show": query.show,
            "trust": query.trust,
            # Rows left out of the ranked view for not being complete; `show=incomplete` lists them.
            "incomplete_count": selectors.board_incomplete_count(query),
            "trust_labels": selectors.trust_legend(),
            "interval": interval_method(),
            "count": len(rows),
            "limit": limit,
            "offset": offset,
        })
        # The public moderation log travels with the board: its newest events, and where the rest are.
        moderation = selectors.board_cached("json-moderation", query, lambda: JSONRenderer().render(
            selectors.moderation_summary(query.dataset)), per_sort=False)
        body = (head[:-1] + b',"moderation":' + moderation + b',"rows":['
                + b",".join(rows[offset:offset + limit]) + b"]}")
        return HttpResponse(body, content_type="application/json")


class EntryApi(APIView):
    """One published run as JSON: the entry page's figures, its cost and effort with their sources, and its
    agreement with its configuration's other published runs, task by task."""

    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(responses={200: EntryOutputSerializer, 404: ErrorOutputSerializer})
    def get(self, request: Request, entry_id: int) -> HttpResponse:
        entry = selectors.entry_public_get(entry_id)  # NotFound: the API's error answer (portal.api_errors)
        body = entry_public(entry, entry_consistency(entry))
        return HttpResponse(JSONRenderer().render(body), content_type="application/json")


class ModerationLogApi(APIView):
    """The public moderation log as JSON, newest first (the same rows as /leaderboard/moderation)."""

    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(parameters=[OpenApiParameter("limit", int), OpenApiParameter("offset", int)],
                   responses={200: ModerationLogOutputSerializer})
    def get(self, request: Request) -> HttpResponse:
        limit, offset = _page_bounds(request.query_params)
        events = selectors.moderation_log()
        body = {"count": events.count(), "limit": limit, "offset": offset,
                "events": [selectors.moderation_public(e) for e in events[offset:offset + limit]]}
        return HttpResponse(JSONRenderer().render(body), content_type="application/json")


class SpotValidationApi(APIView):
    """GET a spot validation of one of your runs: what to re-run (owner or maintainer; else 404). Our client's
    `asibench run --spot-validation ID` reads it; the seed itself is not in it until the validation is decided."""

    @extend_schema(responses={200: SpotValidationOutputSerializer, 404: ErrorOutputSerializer})
    def get(self, request: Request, validation_id: int) -> Response:
        validation = spot_validation.spot_validation_get_for(user=request.user, validation_id=validation_id)
        return Response(spot_validation.spot_validation_public(validation))
