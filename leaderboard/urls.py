from django.urls import path

from leaderboard import views

urlpatterns = [
    path("", views.board, name="leaderboard"),
    path("export.csv", views.board_csv, name="leaderboard-csv"),
    path("heatmap/", views.heatmap, name="leaderboard-heatmap"),
    path("entries/<int:entry_id>/", views.entry_detail, name="leaderboard-entry"),
    path("moderation", views.moderation, name="leaderboard-moderation"),
    path("review/", views.review_queue, name="review-queue"),
    path("review/bulk", views.review_bulk, name="review-bulk"),
    path("review/<uuid:submission_id>/", views.review_detail, name="review-detail"),
    path("review/<uuid:submission_id>/publish", views.review_publish, name="review-publish"),
    path("review/<uuid:submission_id>/reject", views.review_reject, name="review-reject"),
    path("review/<uuid:submission_id>/rescore", views.review_rescore, name="review-rescore"),
    path("review/<uuid:submission_id>/unpublish", views.review_unpublish, name="review-unpublish"),
]
