"""Endpoint resolution (client contract §1): --endpoint, ASIBENCH_SUBMIT_ENDPOINT, AI4SCI_SUBMIT_ENDPOINT as the
official client; then, unlike it, the Portal of the last `asibench login` (cli_client.context), then the default."""

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

DEFAULT_ENDPOINT = "https://asibench.apexin.ai"
_API_SUFFIXES = ("/submissions/bundle", "/proposals", "/submissions")
_PAGE_SUFFIXES = ("/proposals/new", "/submit-results", "/settings", "/activate", "/dashboard")


ENDPOINT_SOURCES = (("--endpoint", None), ("ASIBENCH_SUBMIT_ENDPOINT", "ASIBENCH_SUBMIT_ENDPOINT"),
                    ("AI4SCI_SUBMIT_ENDPOINT", "AI4SCI_SUBMIT_ENDPOINT"))
SAVED_LOGIN = "the saved login"
DEFAULT_SOURCE = "the default"
ENDPOINT_HELP = ("Portal URL (default: $ASIBENCH_SUBMIT_ENDPOINT, then the Portal of your last `asibench login`, "
                 "then the official Portal)")


def given_endpoint(explicit: str | None, env: Mapping[str, str] = os.environ) -> tuple[str, str] | None:
    """(endpoint, where it came from) when the user named one: --endpoint, then the environment
    (the official client's order, contract §1.1); None when neither did. Empty strings count as unset."""
    for (source, variable) in ENDPOINT_SOURCES:
        candidate = explicit if variable is None else env.get(variable)
        if candidate and candidate.strip():
            return candidate.strip(), source
    return None


def portal_api_base(endpoint: str) -> str | None:
    """The API base (`scheme://host[:port]/…/api/v1`) or None when this is not a Portal URL."""
    parts = urlsplit(endpoint.strip().rstrip("/"))
    if not parts.scheme or not parts.netloc:
        return None
    path = parts.path.rstrip("/")
    for suffix in _API_SUFFIXES:
        if path.endswith(suffix):
            path = path[: -len(suffix)]
            break
    else:
        for suffix in _PAGE_SUFFIXES:
            if path.endswith(suffix):
                path = path[: -len(suffix)]
                break
    if path.endswith("/submit"):
        path = path[: -len("/submit")]
    if path.endswith("/api/v1"):
        api_path = path
    elif path.endswith("/api"):
        api_path = path + "/v1"
    elif path == "":
        api_path = "/api/v1"
    else:
        return None
    return f"{parts.scheme}://{parts.netloc}{api_path}"


def origin(api_base: str) -> str:
    parts = urlsplit(api_base)
    return f"{parts.scheme}://{parts.netloc}"


def bundle_upload_url(endpoint: str) -> str:
    trimmed = endpoint.strip().rstrip("/")
    if trimmed.endswith("/submissions/bundle"):
        return trimmed
    api = portal_api_base(trimmed)
    return f"{api}/submissions/bundle" if api else trimmed


def token_settings_url(api_base: str) -> str:
    return f"{origin(api_base)}/submit/settings#cli-tokens"


def proposal_page_url(api_base: str, proposal_id: str) -> str:
    return f"{origin(api_base)}/submit/proposals/{proposal_id}"
