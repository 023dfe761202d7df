"""Dataset API for `asibench task pull`. Public datasets: no login needed."""

from django.core.files.storage import default_storage
from django.http import FileResponse, HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from catalog import selectors
from catalog.throttles import DownloadThrottle
from portal.api_schema import ErrorOutputSerializer, json_object, json_objects
from scoring.selectors import instance_input_digest


class DatasetListApi(APIView):
    permission_classes = [AllowAny]

    class DatasetListOutputSerializer(serializers.Serializer):
        datasets = json_objects("each dataset: name, seed, official, references_public, description, instances")

    @extend_schema(responses={200: DatasetListOutputSerializer})
    def get(self, request: Request) -> Response:
        return Response({"datasets": selectors.dataset_public_list()})


class InstanceListApi(APIView):
    permission_classes = [AllowAny]
    throttle_classes = [DownloadThrottle]

    class InstanceListOutputSerializer(serializers.Serializer):
        dataset = json_object("the dataset, as in the dataset list")
        instances = json_objects("each instance: its id, task, parameters, archive's sha256 and size, download_url, "
                                 "input_digest")

    @extend_schema(
        parameters=[OpenApiParameter("tasks", str, description="Comma-separated task ids")],
        responses={200: InstanceListOutputSerializer, 404: ErrorOutputSerializer},
    )
    def get(self, request: Request, dataset: str) -> Response:
        ds = selectors.dataset_get(dataset)
        task_ids = [t.strip() for t in request.query_params.get("tasks", "").split(",") if t.strip()]
        instances = selectors.instance_list(ds, task_ids or None)
        base = request.build_absolute_uri(f"/api/v1/datasets/{ds.name}/instances/")
        return Response(
            {
                "dataset": selectors.dataset_public_dict(ds),
                "instances": [
                    {**selectors.instance_public_dict(i), "download_url": f"{base}{i.instance_id}/archive",
                     "input_digest": instance_input_digest(i)}
                    for i in instances
                ],
            }
        )


class InstanceArchiveApi(APIView):
    permission_classes = [AllowAny]
    throttle_classes = [DownloadThrottle]

    @extend_schema(responses={(200, "application/gzip"): bytes})
    def get(self, request: Request, dataset: str, instance_id: str) -> FileResponse:
        instance = selectors.instance_get(selectors.dataset_get(dataset), instance_id)
        response = FileResponse(
            default_storage.open(instance.input_archive, "rb"),
            as_attachment=True,
            filename=f"{instance.instance_id}.tar.gz",
            content_type="application/gzip",
        )
        response["X-Content-SHA256"] = instance.input_sha256
        response["Content-Length"] = str(instance.input_bytes)
        return response


class TaskDefinitionsArchiveApi(APIView):
    """`/tasks/definitions.tar.gz`: every public task's definition, for `asibench run --tasks-dir`."""

    permission_classes = [AllowAny]
    throttle_classes = [DownloadThrottle]

    @extend_schema(responses={(200, "application/gzip"): bytes})
    def get(self, request: Request) -> HttpResponse:
        archive = selectors.task_definitions_archive()
        etag = f'"{archive.sha256}"'
        if etag in [tag.strip() for tag in request.headers.get("If-None-Match", "").split(",")]:
            response = HttpResponse(status=304)
        else:
            response = HttpResponse(archive.data, content_type="application/gzip")
            response["Content-Disposition"] = 'attachment; filename="definitions.tar.gz"'
            response["Content-Length"] = str(len(archive.data))
        response["ETag"] = etag
        response["X-Content-SHA256"] = archive.sha256
        response["Cache-Control"] = "public, max-age=300"
        return response
