"""Endpoint resolution exactly as the official client does it (client contract §1)."""

import os
from collections.abc import Mapping
from urllib.parse import urlsplit

DEFAULT_ENDPOINT = "https://asibench.apexin.ai"
_API_SUFFIXES = ("/submissions/bundle", "/proposals", "/submissions")
_PAGE_SUFFIXES = ("/proposals/new", "/submit-results", "/settings", "/activate", "/dashboard")


def submit_endpoint(explicit: str | None, env: Mapping[str, str] = os.environ) -> str:
    for candidate in (explicit, env.get("ASIBENCH_SUBMIT_ENDPOINT"), env.get("AI4SCI_SUBMIT_ENDPOINT")):
        if candidate and candidate.strip():
            return candidate.strip()
    return DEFAULT_ENDPOINT


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
