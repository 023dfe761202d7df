from django.urls import path

from catalog import apis, views

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
    path("datasets/<str:name>/", views.dataset_detail, name="dataset-detail"),
]
