"""Paging parameters of every paginated endpoint against a live Portal (gunicorn on PostgreSQL): a huge
offset or limit is clamped (an empty page, the largest page), anything but ASCII digits is a 400 that
names the parameter, never a 500 (PostgreSQL's OFFSET is a bigint; int() refuses 4,300 digits)."""

import pytest
import requests

from portal.pagination import MAX_OFFSET

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("catalog")]
ENDPOINTS = ["/api/v1/leaderboard/moderation", "/api/v1/leaderboard"]


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("offset", ["99999999999999999999", "9223372036854775808", "9" * 2000])
def test_a_huge_offset_is_clamped_to_an_empty_page(portal_server, endpoint, offset):
    answer = requests.get(f"{portal_server.url}{endpoint}", params={"offset": offset}, timeout=60)
    assert answer.status_code == 200, answer.text[:300]
    body = answer.json()
    assert body["offset"] == MAX_OFFSET
    assert body.get("events", body.get("rows")) == []


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_a_huge_limit_is_clamped_to_the_largest_page(portal_server, endpoint):
    answer = requests.get(f"{portal_server.url}{endpoint}", params={"limit": "9" * 30}, timeout=60)
    assert answer.status_code == 200, answer.text[:300]
    assert answer.json()["limit"] == 1000


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("name, value", [
    ("offset", "²"), ("offset", "①"), ("offset", "٣"), ("offset", "-1"), ("offset", "1e9"),
    ("limit", "0"), ("limit", "²"), ("limit", "1.5"), ("limit", ""),
])
def test_a_malformed_offset_or_limit_is_a_400_naming_it(portal_server, endpoint, name, value):
    answer = requests.get(f"{portal_server.url}{endpoint}", params={name: value}, timeout=60)
    assert answer.status_code == 400, answer.text[:300]
    assert answer.json()["code"] == "bad_page"
    assert answer.json()["detail"].startswith(f"{name} must be")


@pytest.mark.parametrize("page", ["99999999999999999999", "9" * 2000, "²", "-3"])
def test_the_html_pages_settle_any_page_number(portal_server, page):
    for path in ("/leaderboard/", "/leaderboard/moderation"):
        answer = requests.get(f"{portal_server.url}{path}", params={"page": page}, timeout=60)
        assert answer.status_code == 200, (path, answer.text[:300])
