from django.urls import path

from proposals import apis, views

# No trailing slashes: the asibench client must never be redirected (client contract §9.1).
api_urls = [
    path("cli/submit", apis.CliSubmitApi.as_view(), name="api-cli-submit"),
    path("proposals/<str:proposal_id>", apis.ProposalDetailApi.as_view(), name="api-proposal"),
    path("proposals/<str:proposal_id>/file-snapshot", apis.ProposalFileSnapshotApi.as_view(),
         name="api-proposal-snapshot"),
    path("proposals/<str:proposal_id>/files", apis.ProposalFilesApi.as_view(), name="api-proposal-files"),
]

page_urls = [
    path("proposals", views.proposal_list, name="proposal-list"),
    path("proposals/new", views.proposal_new, name="proposal-new"),
    path("proposals/review", views.proposal_review_queue, name="proposal-queue"),
    path("proposals/<uuid:proposal_id>", views.proposal_detail, name="proposal-detail"),
    path("proposals/<uuid:proposal_id>/edit/<str:step>", views.proposal_step, name="proposal-step"),
    path("proposals/<uuid:proposal_id>/files/delete", views.proposal_file_delete, name="proposal-file-delete"),
    path("proposals/<uuid:proposal_id>/submit", views.proposal_submit, name="proposal-submit"),
    path("proposals/<uuid:proposal_id>/comment", views.proposal_comment, name="proposal-comment"),
    path("proposals/<uuid:proposal_id>/review", views.proposal_review_page, name="proposal-review"),
    path("proposals/<uuid:proposal_id>/review/decide", views.proposal_review_decide, name="proposal-decide"),
    path("proposals/<uuid:proposal_id>/review/publish", views.proposal_review_publish, name="proposal-publish"),
    path("proposals/<uuid:proposal_id>/revisions/<int:number>/files/<path:path>", views.proposal_revision_file,
         name="proposal-revision-file"),
]
