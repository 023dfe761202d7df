"""The part of the Hugging Face Hub HTTP API that `huggingface_hub.snapshot_download` and
`hf_hub_download` use for datasets, so `HF_ENDPOINT=<portal>/hf` works with the official client.

Anonymous and read-only: no authentication is attempted (a user's HF_TOKEN is not ours to judge),
and the downloads share one rate limit with the Portal's other dataset downloads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from django.conf import settings
from django.http import FileResponse, HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from rest_framework.exceptions import Throttled
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.views import APIView

from catalog.hub import selectors
from catalog.hub.selectors import BadRequest, HubError
from catalog.throttles import DownloadThrottle
from portal.errors import ValidationFailed
from portal.pagination import whole_number
from portal.public_urls import public_url

RANGE_RE = re.compile(r"bytes=([0-9]*)-([0-9]*)", re.ASCII)
# Byte positions with more digits than this are past the end of any file (and int() refuses 4,300).
_POSITION_DIGITS = 18


def _header_text(text: str) -> str:
    """`text` fit for a header: printable ASCII only. Control characters (which a request can put in a
    message through its path) and non-ASCII are written as escapes, so no header ever carries one."""
    return text.encode("unicode_escape").decode("ascii")[:500]


def _error(status: int, code: str, message: str, commit: str | None = None) -> HttpResponse:
    # huggingface_hub reads X-Error-Code to tell a missing repo, revision or file apart, and shows
    # X-Error-Message (or the body's "error") to the user.
    response = JsonResponse({"error": message}, status=status)
    response["X-Error-Code"] = code
    response["X-Error-Message"] = _header_text(message)
    if commit:
        response["X-Repo-Commit"] = commit
    return response


class HubView(APIView):
    # The Hugging Face Hub's protocol, not our API: kept out of /api/v1/schema/.
    schema = None
    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]
    throttle_classes = [DownloadThrottle]

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, HubError):
            return _error(exc.status_code, exc.error_code, exc.message, exc.commit)
        if isinstance(exc, Throttled):
            wait = int(getattr(exc, "wait", None) or 60)
            response = _error(429, "RateLimited", f"Too many downloads from your address; retry in {wait} s.")
            response["Retry-After"] = str(wait)
            return response
        return super().handle_exception(exc)


class DatasetInfoView(HubView):
    """`GET /api/datasets/<repo>[/revision/<rev>]` (HfApi.dataset_info / repo_info)."""

    def get(self, request: Request, repo: str, revision: str | None = None) -> HttpResponse:
        resolved = selectors.revision_resolve(selectors.dataset_for_repo(repo), revision)
        return JsonResponse(selectors.revision_info(resolved, repo))


class TreeView(HubView):
    """`GET /api/datasets/<repo>/tree/<rev>[/<path>]?recursive=…`, paginated with a `Link: rel="next"` header."""

    def get(self, request: Request, repo: str, revision: str, path: str = "") -> HttpResponse:
        resolved = selectors.revision_resolve(selectors.dataset_for_repo(repo), revision)
        recursive = request.query_params.get("recursive", "").lower() in ("1", "true")
        entries = selectors.tree_entries(resolved, path, recursive)
        cursor = request.query_params.get("cursor", "0")
        try:
            start = whole_number(cursor, "cursor", ceiling=len(entries) + 1)
        except ValidationFailed:
            start = -1
        if not 0 <= start <= len(entries):
            raise BadRequest(f"Invalid cursor {cursor[:40]!r}: use the Link header of the previous page.")
        size = settings.HUB_TREE_PAGE_SIZE
        response = JsonResponse(entries[start:start + size], safe=False)
        if start + size < len(entries):
            query = {k: v for k, v in request.query_params.items() if k != "cursor"}
            path = quote(request.path, safe="/")  # as received, but never a raw control character
            next_url = public_url(f"{path}?{urlencode({**query, 'cursor': start + size})}", request)
            response["Link"] = f'<{next_url}>; rel="next"'
        return response


def _byte_range(header: str, size: int) -> tuple[int, int] | None:
    """(first, last) of a single `bytes=` range, None without a Range header; HubError 416 otherwise."""
    if not header:
        return None
    match = RANGE_RE.fullmatch(header.strip())
    if match is None or match.groups() == ("", ""):
        raise _Unsatisfiable(f"Unsupported Range {header[:80]!r}: only one 'bytes=first-last' range is served.")
    first, last = (_position(part) for part in match.groups())
    if first is None:  # suffix: the last N bytes
        assert last is not None
        if last == 0 or size == 0:
            raise _Unsatisfiable(f"Range {header[:80]!r} selects no bytes of a {size}-byte file.")
        return max(size - last, 0), size - 1
    end = min(last, size - 1) if last is not None else size - 1
    if first >= size or (last is not None and last < first):
        raise _Unsatisfiable(f"Range {header[:80]!r} is outside the file ({size} bytes).")
    return first, end


def _position(digits: str) -> int | None:
    """A byte position of a Range header (None when absent); a huge one is past every file's end."""
    if not digits:
        return None
    if len(digits.lstrip("0")) > _POSITION_DIGITS:
        return 10 ** _POSITION_DIGITS
    return int(digits)


class _Unsatisfiable(HubError):
    status_code = 416
    error_code = "RangeNotSatisfiable"


def _read(path: Path, start: int, length: int) -> Iterator[bytes]:
    with path.open("rb") as handle:
        handle.seek(start)
        while length > 0:
            chunk = handle.read(min(length, 1 << 20))
            if not chunk:
                return
            length -= len(chunk)
            yield chunk


class ResolveView(HubView):
    """`HEAD|GET /datasets/<repo>/resolve/<rev>/<path>`: one file, with the headers hf_hub_download checks
    (X-Repo-Commit, ETag, Content-Length) and single byte ranges for resumed downloads."""

    def get(self, request: Request, repo: str, revision: str, filename: str) -> HttpResponseBase:
        resolved = selectors.revision_resolve(selectors.dataset_for_repo(repo), revision)
        served, local = selectors.resolve_file(resolved, filename)
        headers = {"X-Repo-Commit": resolved.sha, "ETag": f'"{served.sha256}"', "Accept-Ranges": "bytes",
                   "Cache-Control": "public, max-age=60"}
        if request.method == "HEAD":
            response = HttpResponse(content_type="application/octet-stream", headers=headers)
            response["Content-Length"] = str(served.size)
            return response
        try:
            span = _byte_range(request.META.get("HTTP_RANGE", ""), served.size)
        except _Unsatisfiable as exc:
            refused = _error(416, exc.error_code, exc.message, resolved.sha)
            refused["Content-Range"] = f"bytes */{served.size}"
            return refused
        if span is None:
            full = FileResponse(local.open("rb"), content_type="application/octet-stream", headers=headers)
            full["Content-Length"] = str(served.size)
            return full
        first, last = span
        partial = StreamingHttpResponse(_read(local, first, last - first + 1), status=206,
                                        content_type="application/octet-stream", headers=headers)
        partial["Content-Range"] = f"bytes {first}-{last}/{served.size}"
        partial["Content-Length"] = str(last - first + 1)
        return partial

    def head(self, request: Request, repo: str, revision: str, filename: str) -> HttpResponseBase:
        return self.get(request, repo, revision, filename)


def not_served(request: Any, rest: str = "") -> HttpResponse:
    return _error(404, "EntryNotFound", f"/{rest[:200]} is not part of the Hub API this Portal serves "
                  "(dataset revision info, tree and resolve only).")
