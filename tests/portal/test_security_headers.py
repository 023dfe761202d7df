"""Every page carries a CSP without inline script, nosniff, a Referrer-Policy and frame protection,
and the main pages still work in a real Chromium under that policy (no CSP violation)."""

import shutil
from pathlib import Path

import pytest
from django.test import Client

from tests.support import browser_login, screenshot

TINY = Path(__file__).resolve().parents[1] / "scoring" / "catalog" / "tiny_task"
PUBLIC_PAGES = ["/", "/tasks/", "/tasks/demo.tiny_sum/", "/leaderboard/", "/accounts/login/", "/accounts/signup/",
                "/healthz", "/no-such-page/", "/static/portal/site.css", "/guides/", "/guides/faq/", "/status",
                "/leaderboard/heatmap/"]
SIGNED_IN_PAGES = ["/submit/dashboard", "/submit/settings", "/submit/activate", "/submit/submit-results",
                   "/submit/proposals", "/submit/proposals/new", "/accounts/password/change/"]
MAINTAINER_PAGES = ["/leaderboard/review/", "/submit/proposals/review"]


def assert_security_headers(response: object, path: str) -> None:
    headers = {k.lower(): v for k, v in response.headers.items()}  # type: ignore[attr-defined]
    csp = headers.get("content-security-policy", "")
    assert csp, f"{path}: no Content-Security-Policy"
    directives = {d.strip().split(" ", 1)[0]: d.strip() for d in csp.split(";") if d.strip()}
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp, f"{path}: {csp}"
    assert directives["script-src"] == "script-src 'self'", f"{path}: {csp}"
    assert directives["frame-ancestors"] == "frame-ancestors 'none'", f"{path}: {csp}"
    assert directives["object-src"] == "object-src 'none'", f"{path}: {csp}"
    assert headers.get("x-content-type-options") == "nosniff", path
    assert headers.get("referrer-policy") == "same-origin", path
    if not path.startswith("/static/"):  # static files are answered before the frame middleware;
        assert headers.get("x-frame-options") == "DENY", path  # their CSP frame-ancestors covers them


def _tiny_catalog(tmp_path: Path) -> None:
    from scoring.task_loading import catalog_load

    root = tmp_path / "tasks"
    shutil.copytree(TINY, root / "demo" / "tiny_sum")
    assert not catalog_load(tasks_root=root).failures


def test_every_page_and_api_answer_carries_the_security_headers(db, tmp_path, submitter, maintainer):
    _tiny_catalog(tmp_path)
    client = Client()
    for path in PUBLIC_PAGES + ["/api/v1/leaderboard", "/api/v1/me", "/admin/login/"]:
        assert_security_headers(client.get(path), path)
    client.force_login(submitter.user)
    for path in SIGNED_IN_PAGES:
        response = client.get(path)
        assert response.status_code == 200, path
        assert_security_headers(response, path)
    client.force_login(maintainer.user)
    for path in MAINTAINER_PAGES:
        response = client.get(path)
        assert response.status_code == 200, path
        assert_security_headers(response, path)


def test_the_proposal_review_stylesheet_is_the_highlighter_css():
    from proposals.rendering import pygments_css

    static = (Path(__file__).resolve().parents[2] / "proposals" / "static" / "proposals" / "pygments.css").read_text()
    assert str(pygments_css()) in static


# Recorded by the page itself: Chromium fires this event for every blocked script, style or frame.
_RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_main_pages_work_in_chromium_without_csp_violations(portal_server, browser, tmp_path, submitter,
                                                            maintainer):
    _tiny_catalog(tmp_path)
    for persona, paths in ((None, PUBLIC_PAGES[:6]), (submitter, SIGNED_IN_PAGES),
                           (maintainer, MAINTAINER_PAGES)):
        context = browser.new_context()
        page = context.new_page()
        page.add_init_script(_RECORD_VIOLATIONS)
        console: list[str] = []
        page.on("console", lambda msg, sink=console: sink.append(msg.text))
        if persona is not None:
            browser_login(page, portal_server, persona)
        for path in paths:
            response = page.goto(portal_server.url + path)
            assert response is not None and response.status == 200, path
            assert_security_headers(response, path)
            page.wait_for_load_state("load")
            # The stylesheet applied (a blocked or missing CSS would leave the default font).
            assert page.evaluate("getComputedStyle(document.body).fontFamily") != "\"Times New Roman\"", path
            assert page.evaluate("window.__csp") == [], f"{path}: {page.evaluate('window.__csp')}"
        assert not [m for m in console if "Content Security Policy" in m], console
        # Control: markup injected into the page (as an XSS would) cannot run its inline handler,
        # and the recorder above does see the refusal.
        page.evaluate("""document.body.insertAdjacentHTML('beforeend',
                         '<img src=/no-such-image onerror="window.__ran = 1">')""")
        page.wait_for_function("window.__csp.length > 0")
        assert page.evaluate("window.__ran") is None
        assert any(v.startswith("script-src") for v in page.evaluate("window.__csp")), page.evaluate("window.__csp")
        screenshot(page, f"csp-{persona.email.split('@')[0] if persona else 'public'}")
        context.close()
