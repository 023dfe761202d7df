from django.urls import path

from leaderboard import apis

# Included at "api/v1/leaderboard": no trailing slash, the client must never be redirected.
urlpatterns = [path("", apis.LeaderboardApi.as_view(), name="api-leaderboard")]
