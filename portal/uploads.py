"""Browser file uploads: sized by Content-Length before the body is read, streamed to disk under a cap.

A view that takes files declares its cap with `@upload_limit(...)`. `UploadLimitMiddleware` (placed
before CsrfViewMiddleware, which would otherwise parse the body first) then refuses a multipart POST
with no Content-Length (411) or one larger than the cap plus a small allowance for the form fields
(413) without reading a byte of it, and parses the rest itself through `CappedUploadHandler`, which
writes each file to a temp file under FILE_UPLOAD_TEMP_DIR and stops the upload as soon as the file
data passes the cap. No handler keeps an upload in memory (FILE_UPLOAD_HANDLERS holds only this one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import BadRequest, RequestDataTooBig
from django.core.files.uploadhandler import TemporaryFileUploadHandler
from django.http import HttpRequest, HttpResponse

from portal.pages import error_page

# Room for the CSRF token, other small fields and the multipart part headers around the files.
FORM_ALLOWANCE_BYTES = 64 * 1024

MB = 1024 * 1024


class UploadTooLarge(RequestDataTooBig):
    """The file data passed the cap while streaming (a 400 if it ever escapes the middleware)."""

    def __init__(self, message: str, *, one_file: bool) -> None:
        super().__init__(message)
        self.one_file = one_file  # the per-file cap, rather than the whole upload's


class UploadCutOff(BadRequest):
    """The body ended inside a file: shorter than its Content-Length said, or the connection dropped.
    Django would silently drop that file and carry on with the rest of the form."""


def _mb(size: int) -> str:
    return f"{size / MB:.1f} MB" if size < 10 * MB else f"{size // MB} MB"


def upload_limit(total: Callable[[], int], per_file: Callable[[], int] | None = None, *,
                 refusal_code: str | None = None, file_refusal_code: str | None = None) -> Callable[[Any], Any]:
    """Mark a view as taking multipart uploads of at most `total()` bytes of files (`per_file()` each).

    `refusal_code` and `file_refusal_code` are the reason codes an upload over the total and over the
    per-file cap are refused with, so the page can link their FAQ entries.
    """

    def mark(view: Any) -> Any:
        view.upload_limit = (total, per_file)
        view.upload_refusal_codes = (refusal_code, file_refusal_code)
        return view

    return mark


class CappedUploadHandler(TemporaryFileUploadHandler):
    """Django's temp-file handler (0600 files under FILE_UPLOAD_TEMP_DIR) that stops past its caps."""

    def __init__(self, request: HttpRequest | None = None, max_bytes: int | None = None,
                 max_file_bytes: int | None = None) -> None:
        super().__init__(request)
        self.max_bytes = settings.BROWSER_UPLOAD_MAX_BYTES if max_bytes is None else max_bytes
        self.max_file_bytes = max_file_bytes
        self.total = 0
        self.opened: list[Any] = []
        self.interrupted = False

    def new_file(self, *args: Any, **kwargs: Any) -> None:
        super().new_file(*args, **kwargs)
        self.opened.append(self.file)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes | None:
        self.total += len(raw_data)
        if self.total > self.max_bytes:
            self._refuse(f"The upload passed the {_mb(self.max_bytes)} limit; it was stopped there and "
                         "nothing was saved.", one_file=False)
        if self.max_file_bytes is not None and start + len(raw_data) > self.max_file_bytes:
            self._refuse(f"{self.file_name} is larger than the {_mb(self.max_file_bytes)} limit for one file; "
                         "the upload was stopped there and nothing was saved.", one_file=True)
        return super().receive_data_chunk(raw_data, start)

    def upload_interrupted(self) -> None:
        super().upload_interrupted()
        self.interrupted = True

    def upload_complete(self) -> None:
        if self.interrupted:
            raise UploadCutOff("The upload ended inside a file (the body was shorter than its Content-Length "
                               "said, or the connection was cut). Nothing was saved; send it again.")

    def _refuse(self, message: str, *, one_file: bool) -> None:
        for handle in self.opened:  # NamedTemporaryFile: closing removes it
            handle.close()
        raise UploadTooLarge(message, one_file=one_file)


def _refusal(request: HttpRequest, message: str, status: int, code: str | None = None) -> HttpResponse:
    response = error_page(request, message, status=status, code=code)
    # The rest of the body is not wanted: do not let the server drain it for keep-alive.
    response["Connection"] = "close"
    return response


class UploadLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view_func: Any, args: Any, kwargs: Any) -> HttpResponse | None:
        limit = getattr(view_func, "upload_limit", None)
        if limit is None or request.method != "POST":
            return None
        if not request.META.get("CONTENT_TYPE", "").startswith("multipart/form-data"):
            return None
        total, per_file = limit[0](), (limit[1]() if limit[1] else None)
        raw_length = request.META.get("CONTENT_LENGTH") or ""
        if not raw_length.isdigit():
            return _refusal(request, "The upload has no Content-Length, so its size cannot be checked; send it "
                            "from the page's form (no chunked uploads).", 411)
        length = int(raw_length)
        total_code, file_code = getattr(view_func, "upload_refusal_codes", (None, None))
        if length > total + FORM_ALLOWANCE_BYTES:
            return _refusal(request, f"The upload is {_mb(length)}; the limit is {_mb(total)}. Nothing was "
                            "sent to the server's disk.", 413, total_code)
        request.upload_handlers = [CappedUploadHandler(request, max_bytes=total, max_file_bytes=per_file)]
        try:
            request.POST  # noqa: B018 - parse here, under the cap, before CSRF or the view touch the body
        except UploadTooLarge as exc:
            return _refusal(request, str(exc), 413, file_code if exc.one_file else total_code)
        except UploadCutOff as exc:
            return _refusal(request, str(exc), 400)
        return None
