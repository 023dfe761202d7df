"""Routes of the Hub endpoint, mounted under `/hf/` (HF_ENDPOINT=<portal>/hf). No trailing slashes."""

from django.urls import re_path

from catalog.hub import views

REPO = r"(?P<repo>[^/]+(?:/[^/]+)?)"
REV = r"(?P<revision>[^/]+)"

urlpatterns = [
    re_path(rf"^api/datasets/{REPO}/revision/{REV}$", views.DatasetInfoView.as_view(), name="hub-dataset-revision"),
    re_path(rf"^api/datasets/{REPO}/tree/{REV}(?:/(?P<path>.+))?$", views.TreeView.as_view(), name="hub-tree"),
    re_path(rf"^api/datasets/{REPO}$", views.DatasetInfoView.as_view(), name="hub-dataset"),
    re_path(rf"^datasets/{REPO}/resolve/{REV}/(?P<filename>.+)$", views.ResolveView.as_view(), name="hub-resolve"),
    re_path(r"^(?P<rest>.*)$", views.not_served),
]
