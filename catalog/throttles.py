"""One rate limit for every anonymous dataset download (our `task pull` API and the Hub endpoint)."""

from typing import Any

from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle


class DownloadThrottle(SimpleRateThrottle):
    """Per client address, signed in or not: a pull is many small requests, a scrape is many more."""

    scope = "dataset_download"

    def get_cache_key(self, request: Request, view: Any) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
