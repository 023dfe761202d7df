from django.apps import AppConfig


class StatusConfig(AppConfig):
    name = "portal.status"
    label = "status"
