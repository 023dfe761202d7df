from django.urls import path

from portal.submissions import apis, views

api_urls = [
    path("submissions/bundle", apis.BundleUploadApi.as_view(), name="api-bundle-upload"),
    path("submissions/<uuid:submission_id>", apis.SubmissionProgressApi.as_view(), name="api-submission-progress"),
]

page_urls = [
    path("dashboard", views.dashboard, name="dashboard"),
    path("dashboard/live", views.dashboard_live, name="dashboard-live"),
    path("submit-results", views.upload_page, name="submit-results"),
    path("submissions/<uuid:submission_id>", views.submission_detail, name="submission-detail"),
    path("submissions/<uuid:submission_id>/live", views.submission_live, name="submission-live"),
    path("submissions/<uuid:submission_id>/confirm", views.submission_confirm, name="submission-confirm"),
    path("submissions/<uuid:submission_id>/withdraw", views.submission_withdraw, name="submission-withdraw"),
    path("submissions/<uuid:submission_id>/findings/<int:finding_id>/answer", views.finding_answer,
         name="submission-finding-answer"),
]
