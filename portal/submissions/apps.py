from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "portal.submissions"
    label = "submissions"
    default_auto_field = "django.db.models.BigAutoField"
