"""Everything a command touches of the outside world, in one object tests can replace."""

import os
import sys
import webbrowser
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

import click
import requests

from cli_client import CLIENT_NAME, CLIENT_VERSION
from cli_client.errors import CliError, PortalHttpError
from cli_client.remote.credentials import CredentialStore
from cli_client.remote.endpoints import (
    DEFAULT_ENDPOINT,
    DEFAULT_SOURCE,
    SAVED_LOGIN,
    given_endpoint,
    portal_api_base,
)


@dataclass
class CliContext:
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    session: requests.Session = field(default_factory=requests.Session)
    show_traceback: bool = False
    """`asibench --traceback`: the error boundary prints the Python traceback too."""

    def __post_init__(self) -> None:
        self.session.headers["User-Agent"] = f"{CLIENT_NAME}/{CLIENT_VERSION}"
        self.credentials = CredentialStore.from_env(self.env)  # type: ignore[arg-type]

    @property
    def browser_allowed(self) -> bool:
        # Any non-empty value disables the browser, even "0" (client contract §1.2).
        return not self.env.get("ASIBENCH_NO_BROWSER")

    def open_browser(self, url: str) -> None:
        if self.browser_allowed:
            try:
                webbrowser.open(url, new=2)
            except Exception:  # a missing browser is not an error for a CLI
                pass

    def endpoint(self, explicit: str | None) -> tuple[str, str]:
        """(endpoint, where it came from) for a command that talks to a Portal: --endpoint, then
        ASIBENCH_SUBMIT_ENDPOINT / AI4SCI_SUBMIT_ENDPOINT, then the Portal of the most recent saved
        login (so `asibench login --endpoint X` sends every later command to X), then the default."""
        given = given_endpoint(explicit, self.env)
        if given is not None:
            return given
        saved = self.saved_api_base()
        if saved is not None:
            return saved, SAVED_LOGIN
        return DEFAULT_ENDPOINT, DEFAULT_SOURCE

    def saved_api_base(self) -> str | None:
        """The API base of the most recent saved Portal login (either client's), or None."""
        return self.credentials.latest_api_base(lambda key: portal_api_base(key) == key.rstrip("/"))

    def api_base(self, endpoint: str | None) -> str:
        api = portal_api_base(self.endpoint(endpoint)[0])
        if api is None:
            raise CliError("The configured endpoint is not a recognized ASI-Bench Portal URL.")
        return api

    def resolve_token(self, api_base: str, explicit: str | None = None) -> str | None:
        if explicit:
            return explicit
        for name in ("ASIBENCH_SUBMIT_TOKEN", "AI4SCI_SUBMIT_TOKEN"):
            if self.env.get(name):
                return self.env[name]
        entry = self.credentials.load(api_base)
        return entry["token"] if entry else None

    def request(
        self, method: str, url: str, *, token: str | None = None, timeout: float = 60, **kwargs: Any
    ) -> requests.Response:
        headers = kwargs.pop("headers", {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            response = self.session.request(method, url, headers=headers, timeout=timeout, **kwargs)
        except requests.RequestException as exc:
            raise CliError(f"Could not reach the Portal at {url}: {exc}") from exc
        if response.status_code >= 400:
            raise PortalHttpError(response.status_code, error_detail(response))
        return response

    def json(self, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
        response = self.request(method, url, **kwargs)
        if not response.content:
            return {}
        try:
            body = response.json()
        except ValueError as exc:
            raise CliError(f"The Portal sent a reply that is not JSON ({url}).") from exc
        return body if isinstance(body, dict) else {}


def error_detail(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.reason or "error"
    if isinstance(body, dict) and body.get("detail"):
        return str(body["detail"])
    return response.text[:500]


pass_cli = click.make_pass_decorator(CliContext)
"""Hands a command the `CliContext` that `main` put on click's context."""
