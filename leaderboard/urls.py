from django.urls import path

from leaderboard import regrade_views, views

urlpatterns = [
    path("", views.board, name="leaderboard"),
    path("export.csv", views.board_csv, name="leaderboard-csv"),
    path("heatmap/", views.heatmap, name="leaderboard-heatmap"),
    path("cost/", views.cost_score, name="leaderboard-cost"),
    path("entries/<int:entry_id>/", views.entry_detail, name="leaderboard-entry"),
    path("moderation", views.moderation, name="leaderboard-moderation"),
    path("entries/<int:entry_id>/regrade/acknowledge", regrade_views.regrade_acknowledge_view,
         name="regrade-acknowledge"),
    path("review/", views.run_review_queue, name="review-queue"),
    path("review/bulk", views.run_review_bulk, name="review-bulk"),
    path("review/<uuid:submission_id>/", views.run_review_detail, name="review-detail"),
    path("review/<uuid:submission_id>/publish", views.run_review_publish, name="review-publish"),
    path("review/<uuid:submission_id>/reject", views.run_review_reject, name="review-reject"),
    path("review/<uuid:submission_id>/rescore", views.run_review_rescore, name="review-rescore"),
    path("review/<uuid:submission_id>/spot", views.run_review_spot_draw, name="review-spot-draw"),
    path("spot/<int:validation_id>/attach", views.spot_validation_attach, name="spot-attach"),
    path("review/<uuid:submission_id>/trust", views.run_review_trust, name="review-trust"),
    path("review/<uuid:submission_id>/unpublish", views.run_review_unpublish, name="review-unpublish"),
    path("review/<uuid:submission_id>/rescan", views.run_review_rescan, name="review-rescan"),
    path("review/<uuid:submission_id>/findings/<int:finding_id>/decide", views.finding_decide,
         name="review-finding-decide"),
]
