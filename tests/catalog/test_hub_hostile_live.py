"""Malformed requests to the Hub endpoint (/hf) of a live Portal (gunicorn): each gets its 4xx (or, for
a range past the end, the clamped answer HTTP prescribes), never a 500, and no response header ever
carries a control character, whatever the request echoed."""

import re
import socket
from urllib.parse import urlsplit

import pytest
import requests

pytestmark = [pytest.mark.django_db(transaction=True)]
SEED42 = "Apexintelligence-AI/ASI-Bench-seed42"
TASK = "chemistry.counterpoise_cbs_energies"
FILE = f"tasks/{TASK}__seed42/prompt_b1.md"
CONTROL = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")  # a tab is a header's own whitespace


def raw_get(url: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """GET `path` exactly as written (no client-side normalising), with every header line as sent."""
    parts = urlsplit(url)
    lines = [f"GET {path} HTTP/1.1", f"Host: {parts.netloc}", "Connection: close",
             *(f"{k}: {v}" for k, v in (headers or {}).items())]
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())  # UTF-8, as a client would send it
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.split(b"\r\n")
    pairs = [tuple(line.split(b":", 1)) for line in header_lines]
    return int(status_line.split()[1]), [(k.strip(), v.strip()) for k, v in pairs], body


def assert_clean_headers(headers: list[tuple[bytes, bytes]]) -> None:
    dirty = [(k, v) for k, v in headers if CONTROL.search(v) or CONTROL.search(k)]
    assert dirty == [], dirty


# (2,000 digits: gunicorn itself refuses a request line past 4,094 bytes)
@pytest.mark.parametrize("cursor", ["²", "①", "٣", "-1", "1e3", "9" * 2000, "0x10", " 1"])
def test_a_malformed_tree_cursor_is_a_400(portal_server, submit_catalog, cursor):
    answer = requests.get(f"{portal_server.url}/hf/api/datasets/{SEED42}/tree/main",
                          params={"recursive": "true", "cursor": cursor}, timeout=60)
    assert answer.status_code == 400, answer.text[:300]
    assert answer.headers["X-Error-Code"] == "BadRequest"
    assert answer.headers["X-Error-Message"].startswith("Invalid cursor")


def test_a_good_cursor_still_pages(portal_server, submit_catalog):
    first = requests.get(f"{portal_server.url}/hf/api/datasets/{SEED42}/tree/main",
                         params={"recursive": "true", "cursor": "1"}, timeout=60)
    assert first.status_code == 200 and first.json()


@pytest.mark.parametrize("value, status", [
    ("bytes=" + "9" * 5000 + "-", 416),
    ("bytes=0-" + "9" * 5000, 206),  # a last byte past the end is clamped to the file (RFC 9110 §14.1.2)
    ("bytes=-" + "9" * 5000, 206),  # a suffix longer than the file: all of it
    ("bytes=" + "1" * 3000 + "-" + "2" * 3000, 416),  # (gunicorn refuses a header line past 8190 bytes)
    ("bytes=²-", 416),
    ("bytes=٣-", 416),
])
def test_a_range_of_thousands_of_digits_or_other_digits_is_answered(portal_server, submit_catalog, value, status):
    whole = requests.get(f"{portal_server.url}/hf/datasets/{SEED42}/resolve/main/{FILE}", timeout=60)
    assert whole.status_code == 200
    code, headers, body = raw_get(portal_server.url, f"/hf/datasets/{SEED42}/resolve/main/{FILE}",
                                  {"Range": value})
    assert code == status, body[:300]
    assert_clean_headers(headers)
    if status == 206:
        assert body == whole.content
    else:
        assert dict(headers)[b"X-Error-Code"] == b"RangeNotSatisfiable"


@pytest.mark.parametrize("path", [
    "/hf/%0D", "/hf/%01", "/hf/%7F", "/hf/x%0D%0AX-Injected:%201",
    "/hf/api/datasets/%01/revision/main",
    f"/hf/api/datasets/{SEED42}/revision/%0D%7F",
    f"/hf/api/datasets/{SEED42}/tree/main/tasks%01",
    f"/hf/datasets/{SEED42}/resolve/main/tasks/%0D/%01%7F",
    f"/hf/datasets/{SEED42}/resolve/%1B[31m/{FILE}",
])
def test_control_characters_in_the_path_get_a_4xx_and_never_reach_a_header(portal_server, submit_catalog, path):
    code, headers, body = raw_get(portal_server.url, path)
    assert 400 <= code < 500, (code, body[:300])
    assert_clean_headers(headers)
    assert all(name.lower() != b"x-injected" for name, _ in headers)
    message = dict(headers).get(b"X-Error-Message")
    if message is not None:  # still says what was asked for, with the control characters escaped
        assert message and b"\\x" in message or b"\\r" in message, message
