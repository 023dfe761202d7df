"""What config/error_reporting.py's before_send leaves of an event that carries everything a request can."""

import json

from config.error_reporting import scrub


def test_an_event_keeps_the_route_and_the_error_and_nothing_that_names_a_person():
    event = scrub({
        "user": {"id": 7, "email": "erin@lab.example", "ip_address": "203.0.113.9"},
        "transaction": "/accounts/password/reset/key/{uidb36}-{key}/",
        "request": {"url": "https://portal.example/accounts/password/reset/key/1-set-key-99/", "method": "POST",
                    "query_string": "token=query-secret", "cookies": {"sessionid": "cookie-secret"},
                    "data": {"password": "body-secret"}, "env": {"REMOTE_ADDR": "203.0.113.9"},
                    "headers": {"Authorization": "Bearer header-secret", "Cookie": "sessionid=cookie-secret",
                                "X-Forwarded-For": "198.51.100.7", "User-Agent": "agent", "Content-Type": "text/html"}},
        "exception": {"values": [{"type": "ValueError", "value": "no account for erin@lab.example",
                                  "stacktrace": {"frames": [{"function": "f",
                                                             "vars": {"password": "local-secret"}}]}}]},
        "logentry": {"message": "mail to erin@lab.example failed", "params": ["erin@lab.example"]},
        "breadcrumbs": {"values": [{"message": "sent to erin@lab.example",
                                    "data": {"url": "https://x/?k=crumb-secret"}}]},
    })
    text = json.dumps(event)
    for leak in ("erin@lab.example", "203.0.113.9", "198.51.100.7", "secret", "set-key-99", "agent", "crumb-secret"):
        assert leak not in text, leak
    assert event["request"] == {"url": "https://portal.example/accounts/password/reset/key/{uidb36}-{key}/",
                                "method": "POST", "headers": {"Content-Type": "text/html"}}
    assert event["exception"]["values"][0]["value"] == "no account for [email]"
    assert event["exception"]["values"][0]["stacktrace"]["frames"] == [{"function": "f"}]
    assert event["logentry"] == {"message": "mail to [email] failed", "formatted": None}
