from django.apps import AppConfig


class GuidesConfig(AppConfig):
    name = "portal.guides"
    label = "guides"
