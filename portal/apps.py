from django.apps import AppConfig
from django.core import checks


class PortalConfig(AppConfig):
    name = "portal"
    label = "portal"

    def ready(self) -> None:
        from portal.public_urls import public_url_check

        checks.register(public_url_check, checks.Tags.security, deploy=True)
