"""URL map. API routes have no trailing slash: the asibench client must never be redirected."""

from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView

from catalog import urls as catalog_urls
from leaderboard import apis as leaderboard_apis
from portal import health, views
from portal.accounts import apis as account_apis
from portal.accounts import views as account_views
from portal.guides import urls as guide_urls
from portal.status import views as status_views
from portal.submissions import urls as submission_urls
from proposals import urls as proposal_urls

api_v1: list[URLPattern | URLResolver] = [
    path("me", account_apis.MeApi.as_view(), name="api-me"),
    path("cli/device-code", account_apis.DeviceCodeApi.as_view(), name="api-device-code"),
    path("cli/device-token", account_apis.DeviceTokenApi.as_view(), name="api-device-token"),
    *catalog_urls.api_urls,
    *submission_urls.api_urls,
    *proposal_urls.api_urls,
    path("leaderboard", include("leaderboard.urls_api")),
    path("leaderboard/moderation", leaderboard_apis.ModerationLogApi.as_view(), name="api-leaderboard-moderation"),
    path("leaderboard/entries/<int:entry_id>", leaderboard_apis.EntryApi.as_view(), name="api-leaderboard-entry"),
    path("spot-validations/<int:validation_id>", leaderboard_apis.SpotValidationApi.as_view(),
         name="api-spot-validation"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
]

submit_pages = [
    path("", RedirectView.as_view(url="/submit/dashboard"), name="submit-home"),
    path("settings", account_views.settings_page, name="settings"),
    path("settings/tokens/<uuid:token_id>/revoke", account_views.token_revoke, name="token-revoke"),
    path("activate", account_views.activate_page, name="activate"),
    *submission_urls.page_urls,
    *proposal_urls.page_urls,
]

# The admin signs in through allauth's login, which is rate-limited; its own form is not.
admin.site.login = secure_admin_login(admin.site.login)  # type: ignore[method-assign]

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz", health.healthz, name="healthz"),
    path("status", status_views.status_page, name="status"),
    *catalog_urls.page_urls,
    *guide_urls.page_urls,
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
    path("api/v1/", include(api_v1)),
    path("submit", RedirectView.as_view(url="/submit/dashboard")),
    path("submit/", include(submit_pages)),
    path("leaderboard/", include("leaderboard.urls")),
    path("hf/", include("catalog.hub.urls")),
]
