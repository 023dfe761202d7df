"""Reading the multipart PUT of `…/proposals/<id>/files` (client contract §4.4 T3, §9.4).

Django parses multipart only for POST and strips directory parts from file names; here the
body is parsed explicitly, file names are kept whole (`data/nested/input.csv`), and the
per-file and total limits hold while the body streams, before anything is stored.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.files.uploadhandler import FileUploadHandler
from django.http import HttpRequest
from django.http.multipartparser import MultiPartParser, MultiPartParserError

from contracts.task_files import MAX_FILE_BYTES, MAX_TASK_BYTES, MAX_TASK_FILES
from portal.errors import PayloadTooLarge, ValidationFailed
from proposals.files import IncomingFile


class PathKeepingParser(MultiPartParser):
    def sanitize_file_name(self, file_name: str) -> str | None:
        # Kept verbatim: the task file rules check (and refuse) unsafe names afterwards.
        return file_name or None


class _Part:
    """One received file: its name exactly as sent, an anonymous temp file, size and sha256."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.file = tempfile.TemporaryFile(dir=settings.FILE_UPLOAD_TEMP_DIR)
        self.digest = hashlib.sha256()
        self.size = 0

    def close(self) -> None:
        self.file.close()


class TaskFilesHandler(FileUploadHandler):
    """The only handler: streams each part to a temp file, hashing it, and stops the upload as
    soon as one file or the whole set is too big. (Django's own handlers would cut the
    directory part off the name.)"""

    def __init__(self, request: HttpRequest | None = None) -> None:
        super().__init__(request)
        self.total = 0
        self.part: _Part | None = None

    def new_file(self, field_name: str, file_name: str, *args: Any, **kwargs: Any) -> None:
        super().new_file(field_name, file_name, *args, **kwargs)
        self.part = _Part(file_name)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        assert self.part is not None
        self.part.size += len(raw_data)
        self.total += len(raw_data)
        if self.part.size > MAX_FILE_BYTES:
            self.part.close()
            raise PayloadTooLarge(f"Task file exceeds {MAX_FILE_BYTES} bytes: {self.part.name}",
                                  code="file_too_large")
        if self.total > MAX_TASK_BYTES:
            self.part.close()
            raise PayloadTooLarge(f"Task files may total at most {MAX_TASK_BYTES} bytes", code="set_too_large")
        self.part.file.write(raw_data)
        self.part.digest.update(raw_data)

    # Our parts are not UploadedFile objects on purpose: Django only stores what this returns.
    def file_complete(self, file_size: int) -> _Part:  # type: ignore[override]
        assert self.part is not None
        self.part.file.seek(0)
        return self.part


@contextmanager
def parsed_task_files(request: HttpRequest) -> Iterator[list[IncomingFile]]:
    """The uploaded parts as IncomingFile (name as sent); temp files are closed on exit."""
    content_type = request.META.get("CONTENT_TYPE", "")
    if not content_type.startswith("multipart/form-data"):
        raise ValidationFailed("Send the files as multipart/form-data, every part named 'files'.",
                               code="bad_content_type")
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length <= 0:
        raise ValidationFailed("A Content-Length header is required.", code="length_required")
    if length > settings.PROPOSAL_MAX_BODY_BYTES:
        raise PayloadTooLarge(f"The upload is {length} bytes; the limit is {settings.PROPOSAL_MAX_BODY_BYTES} bytes "
                              f"({MAX_TASK_BYTES} bytes of files).", code="set_too_large")
    try:
        fields, files = PathKeepingParser(
            # The request is the body stream, as Django's own request.POST parsing passes it.
            request.META, request, [TaskFilesHandler(request)], request.encoding or "utf-8"  # type: ignore[arg-type]
        ).parse()
    except TooManyFilesSent:
        raise ValidationFailed(f"A Task may contain at most {MAX_TASK_FILES} uploaded files",
                               code="too_many_files") from None
    except (MultiPartParserError, TooManyFieldsSent, RequestDataTooBig) as exc:
        raise ValidationFailed(f"Malformed multipart body: {exc}", code="bad_multipart") from None
    parts: list[_Part] = [part for _, values in files.lists() for part in values]
    try:
        other = sorted(set(fields) | (set(files) - {"files"}))
        if other:
            raise ValidationFailed(f"Only parts named 'files' are accepted, not: {', '.join(other)}",
                                   code="bad_multipart")
        yield [IncomingFile(p.name, p.file, p.size, p.digest.hexdigest()) for p in parts]
    finally:
        for part in parts:
            part.close()
