"""Tar headers, read by hand in one linear pass."""

from __future__ import annotations

from dataclasses import dataclass

from portal.submissions.bundle_verify.stream import TarFeed
from portal.submissions.bundle_verify.types import BundleLimits, BundleRejected

# The verifier reads tar headers itself instead of through `tarfile`: a strict subset of POSIX
# ustar/pax (what Python's `tarfile` writes, contract §3.6) parsed in one linear pass. tarfile's
# own header code trusts sizes (negative PAX sizes send it backwards), runs regular expressions
# that are quadratic on crafted PAX records (CVE-2024-6232) and reads GNU sparse maps with
# unbounded `buf +=` loops; none of that is needed to read a bundle.

BLOCK = 512
_ZERO_BLOCK = bytes(BLOCK)
_PAX_BODY_CAP = 64 * 1024  # a bundle's PAX records hold a path and a few numbers; 64 KB is generous
REGULAR_TYPES = (b"0", b"\0", b"7")
LINK_TYPES = {b"1": "hard link", b"2": "symbolic link"}
_PAX_TYPES = (b"x", b"X")
_GNU_LONG_TYPES = (b"L", b"K")
_USTAR_MAGIC = b"ustar\x0000"


@dataclass
class Header:
    name: str
    typeflag: bytes
    size: int


def _octal_or_base256(field: bytes, what: str) -> int:
    if field[:1] in (b"\x80", b"\xff"):  # GNU base-256, two's complement for 0xff
        value = int.from_bytes(field[1:], "big")
        if field[0] == 0xFF:
            value -= 256 ** (len(field) - 1)
    else:
        text = field.split(b"\0", 1)[0].strip()
        if text.translate(None, b"01234567"):
            raise BundleRejected("corrupt_tar", f"a tar header has an invalid {what} field")
        value = int(text, 8) if text else 0
    if value < 0:
        raise BundleRejected("corrupt_tar", f"a tar header declares a negative {what}")
    return value


def _check_checksum(block: bytes) -> None:
    stored = _octal_or_base256(block[148:156], "checksum")
    unsigned = 256 + sum(block[:148]) + sum(block[156:])
    if stored == unsigned:
        return
    high = sum(1 for b in block[:148] + block[156:] if b > 127)  # some old tars summed signed chars
    if stored != unsigned - 256 * high:
        raise BundleRejected("corrupt_tar", "the archive is not a valid tar stream (bad header checksum)")


def _parse_pax(body: bytes, limits: BundleLimits) -> dict[str, bytes]:
    """PAX records `"<len> <key>=<value>\\n"`, checked record by record (linear in the body)."""
    records: dict[str, bytes] = {}
    pos, end = 0, len(body)
    while pos < end and body[pos] != 0:
        space = body.find(b" ", pos, min(end, pos + 8))
        length = int(body[pos:space]) if space > pos and body[pos:space].isdigit() else 0
        stop = pos + length
        equals = body.find(b"=", space + 1, stop) if length else -1
        if equals <= space + 1 or stop > end or body[stop - 1] != 0x0A:
            raise BundleRejected("corrupt_tar", "a PAX extended header is malformed")
        key = body[space + 1:equals].decode("utf-8", "replace")
        value = body[equals + 1:stop - 1]
        if key.startswith("GNU.sparse."):
            raise BundleRejected("special_member", "sparse files are not allowed in a bundle")
        if key in ("path", "linkpath") and len(value) > limits.max_name_bytes:
            raise BundleRejected("name_too_long", f"a member name is longer than {limits.max_name_bytes} bytes")
        records[key] = value
        pos = stop
    if body.count(0, pos) != end - pos:
        raise BundleRejected("corrupt_tar", "a PAX extended header is malformed")
    return records


def _read_exact(feed: TarFeed, size: int, what: str) -> bytes:
    data = feed.read(size)
    if len(data) != size:
        raise BundleRejected("corrupt_tar", f"the archive ends inside {what}")
    feed.consume(-size % BLOCK, None)
    return data


def next_header(feed: TarFeed, limits: BundleLimits) -> Header | None:
    """The next member's header with its PAX / GNU long name applied; None at the end of the archive."""
    pax: dict[str, bytes] | None = None
    long_name: bytes | None = None
    while True:
        block = feed.read(BLOCK)
        if not block:
            return None  # like tarfile: a stream that stops at a header boundary ends the archive
        if len(block) != BLOCK:
            raise BundleRejected("corrupt_tar", "the archive ends inside a tar header")
        if block == _ZERO_BLOCK:
            return None
        _check_checksum(block)
        typeflag = block[156:157]
        size = _octal_or_base256(block[124:136], "size")
        if typeflag in _PAX_TYPES or typeflag in _GNU_LONG_TYPES:
            if pax is not None or long_name is not None:
                raise BundleRejected("corrupt_tar", "two extended headers in a row")
            if size > _PAX_BODY_CAP:
                raise BundleRejected("corrupt_tar", f"a tar extended header is larger than {_PAX_BODY_CAP // 1024} KB")
            body = _read_exact(feed, size, "an extended header")
            if typeflag in _PAX_TYPES:
                pax = _parse_pax(body, limits)
            elif size > limits.max_name_bytes + 1:
                raise BundleRejected("name_too_long", f"a member name is longer than {limits.max_name_bytes} bytes")
            else:
                long_name = body.split(b"\0", 1)[0] if typeflag == b"L" else b""
            continue
        if typeflag == b"g":
            raise BundleRejected("corrupt_tar", "global PAX headers are not allowed in a bundle")
        if pax is not None and "size" in pax:
            raw_size = pax["size"]
            if not raw_size.isdigit():
                raise BundleRejected("corrupt_tar", f"a PAX size {raw_size[:40]!r} is not a non-negative integer")
            if len(raw_size) > 20:  # more than 2**64: no archive holds that
                raise BundleRejected("file_too_large", "a member declares a size beyond any limit")
            size = int(raw_size)
        if pax is not None and "path" in pax:
            raw_name = pax["path"]
        elif long_name:
            raw_name = long_name
        else:
            raw_name = block[:100].split(b"\0", 1)[0]
            prefix = block[345:500].split(b"\0", 1)[0]
            if prefix and block[257:265] != _USTAR_MAGIC:
                # POSIX readers ignore these bytes outside ustar; Python's tarfile (the extraction for
                # scoring) prepends them anyway: one member, two names.
                shown = raw_name.decode("utf-8", "replace")
                raise BundleRejected("ambiguous_name", f"{shown}: a GNU or old-style tar header carries a ustar "
                                     "name prefix; write the archive in POSIX (pax) format")
            if prefix:
                raw_name = prefix + b"/" + raw_name
        if len(raw_name) > limits.max_name_bytes:
            raise BundleRejected("name_too_long", f"a member name is longer than {limits.max_name_bytes} bytes")
        name = raw_name.decode("utf-8", "surrogateescape")
        if typeflag == b"\0" and name.endswith("/"):
            typeflag = b"5"
        if typeflag == b"5":
            name = name.rstrip("/")
        return Header(name=name, typeflag=typeflag, size=size)
