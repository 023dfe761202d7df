"""Everything a command touches of the outside world, in one object tests can replace."""

import os
import sys
import webbrowser
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

import click
import requests

from cli_client import __version__
from cli_client.errors import CliError, PortalHttpError
from cli_client.remote.credentials import CredentialStore
from cli_client.remote.endpoints import portal_api_base, submit_endpoint


@dataclass
class CliContext:
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    stdin: TextIO = field(default_factory=lambda: sys.stdin)
    session: requests.Session = field(default_factory=requests.Session)
    show_traceback: bool = False
    """`asibench --traceback`: the error boundary prints the Python traceback too."""

    def __post_init__(self) -> None:
        self.session.headers["User-Agent"] = f"asibench-portal-cli/{__version__}"
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

    def api_base(self, endpoint: str | None) -> str:
        api = portal_api_base(submit_endpoint(endpoint, self.env))
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
