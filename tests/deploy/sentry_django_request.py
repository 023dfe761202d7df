"""Run as a script with SENTRY_DSN set: one signed-in request to a view that raises, through the Portal's
settings (and so its Sentry set-up), then flush. Prints nothing; the Sentry test reads what arrived.

argv: email, client address, forwarded address, cookie, bearer token, query token, password, path key. They
come in as arguments so that none is written in this file (whose lines a report may quote as context)."""

import os
import sys

import django

sys.path.insert(0, os.getcwd())
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup()

import sentry_sdk  # noqa: E402
from django.test import Client  # noqa: E402
from django.urls import path  # noqa: E402

from config import urls  # noqa: E402
from portal.accounts.models import User  # noqa: E402

EMAIL, ADDRESS, FORWARDED, COOKIE, BEARER, QUERY, PASSWORD, KEY = sys.argv[1:9]


def explodes(request: object, key: str) -> None:
    raise RuntimeError(f"page broke for {EMAIL}")


urls.urlpatterns.append(path("explodes/<str:key>/", explodes))
user, _ = User.objects.get_or_create(email=EMAIL, defaults={"display_name": "Carol"})
client = Client(raise_request_exception=False, REMOTE_ADDR=ADDRESS)
client.force_login(user)
client.cookies["trace_me"] = COOKIE
response = client.post(f"/explodes/{KEY}/?token={QUERY}", data={"password": PASSWORD},
                       HTTP_AUTHORIZATION=f"Bearer {BEARER}", HTTP_X_FORWARDED_FOR=FORWARDED)
assert response.status_code == 500, response.status_code
sentry_sdk.flush(timeout=10)
User.objects.filter(id=user.id).delete()
