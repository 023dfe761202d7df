"""The project's wiring: settings, the root URL map, the WSGI entry and the Celery app.

Nothing in the apps imports this package (they read `django.conf.settings`); it imports them.
"""

from config.celery import app as celery_app

__all__ = ["celery_app"]
