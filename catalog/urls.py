from django.urls import path

from catalog import apis, health_views, views

api_urls = [
    path("datasets", apis.DatasetListApi.as_view(), name="api-datasets"),
    path("datasets/<str:dataset>/instances", apis.InstanceListApi.as_view(), name="api-instances"),
    path(
        "datasets/<str:dataset>/instances/<str:instance_id>/archive",
        apis.InstanceArchiveApi.as_view(),
        name="api-instance-archive",
    ),
]

page_urls = [
    path("tasks/", views.task_list, name="task-list"),
    path("tasks/definitions.tar.gz", apis.TaskDefinitionsArchiveApi.as_view(), name="task-definitions"),
    path("tasks/<str:task_id>/", views.task_detail, name="task-detail"),
    path("tasks/<str:task_id>/health/check", health_views.task_health_check_now, name="task-health-check"),
    path("tasks/<str:task_id>/errata/<int:erratum_id>/confirm", health_views.erratum_confirm, name="erratum-confirm"),
    path("tasks/<str:task_id>/errata/<int:erratum_id>/dismiss", health_views.erratum_dismiss, name="erratum-dismiss"),
    path("datasets/<str:name>/", views.dataset_detail, name="dataset-detail"),
]
