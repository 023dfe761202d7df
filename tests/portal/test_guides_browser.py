"""The guides, the heatmap and /status in headless Chromium against gunicorn: no console or CSP error,
every internal link resolves (anchors included), and a refusal's help link lands on its FAQ entry."""

from urllib.parse import urlsplit

import pytest

from leaderboard import services as review
from portal.guides import selectors
from portal.guides.faq import faq_codes, help_path
from tests.leaderboard.factories import RunSpec, make_catalog, profile_score, scored_run
from tests.support import browser_login, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Recorded by the page itself: Chromium fires this event for every blocked script, style or frame.
_RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
"""


def _watch(page: object) -> list[str]:
    problems: list[str] = []
    page.add_init_script(_RECORD_VIOLATIONS)  # type: ignore[attr-defined]
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text} {msg.location}")  # type: ignore
            if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))  # type: ignore[attr-defined]
    page.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}")  # type: ignore[attr-defined]
            if r.status >= 400 else None)
    return problems


def _visit(page: object, url: str) -> None:
    response = page.goto(url)  # type: ignore[attr-defined]
    assert response is not None and response.status == 200, url
    page.wait_for_load_state("load")  # type: ignore[attr-defined]
    assert page.evaluate("window.__csp") == [], f"{url}: {page.evaluate('window.__csp')}"  # type: ignore[attr-defined]
    # The stylesheet applied (a blocked or missing CSS would leave the default font).
    assert page.evaluate("getComputedStyle(document.body).fontFamily") != '"Times New Roman"', url  # type: ignore


def test_each_guide_renders_without_errors_and_every_internal_link_resolves(portal_server, page, submitter,
                                                                             maintainer):
    catalog = make_catalog()
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], agent="codex",
                             score=lambda t, lv: profile_score(0, t, lv)))
    review.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Codex")
    problems = _watch(page)
    browser_login(page, portal_server, submitter)  # links to /submit/… pages resolve for a signed-in reader
    origin = urlsplit(portal_server.url).netloc
    fetched: dict[str, tuple[int, str]] = {}
    checked = 0
    for path in ["/guides/", *(g.url for g in selectors.guide_list())]:
        _visit(page, portal_server.url + path)
        assert page.locator("article.guide, [data-testid=guide-list]").count() == 1, path
        for href in page.eval_on_selector_all("main a[href]", "links => links.map(a => a.href)"):
            link = urlsplit(href)
            assert link.netloc == origin, f"{path} links outside the Portal: {href}"
            target = link.path + (f"?{link.query}" if link.query else "")
            if target not in fetched:
                answer = page.request.get(portal_server.url + target)
                fetched[target] = (answer.status, answer.body().decode("utf-8", "replace"))  # a download too
            status, body = fetched[target]
            assert status == 200, f"{path} → {href}: HTTP {status}"
            if link.fragment:
                assert f'id="{link.fragment}"' in body, f"{path} → {href}: no element with that id"
            checked += 1
        screenshot(page, f"guide{path.strip('/').replace('/', '-')}")
    assert checked > 100 and "/guides/faq/" in fetched and "/submit/settings" in fetched
    for path in ("/status", "/leaderboard/heatmap/"):
        _visit(page, portal_server.url + path)
    assert page.locator("[data-testid=heatmap] svg rect title").count() == len(catalog["seed42"])
    screenshot(page, "leaderboard-heatmap")
    assert not problems, problems


def test_a_refusal_links_to_its_own_faq_entry(portal_server, page, submitter, tmp_path):
    make_catalog()
    problems = _watch(page)
    browser_login(page, portal_server, submitter)
    junk = tmp_path / "run.tar.gz"
    junk.write_bytes(b"PK\x03\x04 a zip archive, not a bundle")
    page.goto(portal_server.url + "/submit/submit-results")
    page.set_input_files("input[name=bundle]", str(junk))
    page.click("form.stack button[type=submit]")
    assert "Bundle refused (not_gzip)" in page.locator("[data-testid=upload-error]").inner_text()
    assert problems and all("/submit/submit-results" in p for p in problems)  # the refusal's own 422
    problems.clear()
    page.click("[data-testid=error-help]")
    page.wait_for_load_state("load")
    assert page.url == portal_server.url + "/guides/faq/#not_gzip"
    assert page.evaluate("document.querySelector(':target').id") == "not_gzip"
    assert page.evaluate("document.querySelector(':target').textContent").startswith("not_gzip")
    # The entry is on screen, not merely somewhere on the page.
    assert page.evaluate("document.querySelector(':target').getBoundingClientRect().top") < 200
    screenshot(page, "faq-not-gzip")
    # Every code the FAQ explains lands on a heading that names that code.
    for code in sorted(faq_codes()):
        page.goto(portal_server.url + str(help_path(code)))
        assert page.evaluate("document.querySelector(':target')?.id") == code, code
        assert page.evaluate("document.querySelector(':target').textContent").startswith(code), code
    assert not problems, problems


def test_a_proposal_upload_refusal_links_its_entry(portal_server, page, submitter, tmp_path):
    from contracts.task_files import MAX_FILE_BYTES
    from proposals import services as proposals

    draft = proposals.proposal_create(owner=submitter.user, fields={"task_id": "physics.toy", "name": "Toy",
                                                                    "domain": "physics"})
    problems = _watch(page)
    browser_login(page, portal_server, submitter)
    step = f"{portal_server.url}/submit/proposals/{draft.id}/edit/files"

    def upload(name: str, size: int) -> None:
        path = tmp_path / name
        path.write_bytes(b"\0" * size)
        page.goto(step)
        page.set_input_files("input[name=upload]", str(path))
        page.click("[data-testid=step-form] button[name=save]")
        page.wait_for_load_state("load")

    def follow_help(code: str) -> None:
        page.click("[data-testid=error-help]")
        page.wait_for_load_state("load")
        assert page.url == f"{portal_server.url}/guides/faq/#{code}"
        assert page.evaluate("document.querySelector(':target').id") == code

    upload("notes.docx", 10)  # refused by the service: a message on the form
    assert "Task file type .docx is not supported" in page.locator("[data-testid=form-error]").inner_text()
    follow_help("file_type")
    upload("big.npy", MAX_FILE_BYTES + 1)  # stopped while it streams in: the error page
    assert "big.npy is larger than the" in page.locator("main").inner_text()
    screenshot(page, "proposal-upload-too-large")
    follow_help("file_too_large")
    assert not draft.files.exists()
    # The refusals' own 422 and 413 are the only failed responses.
    assert problems and all(f"/submit/proposals/{draft.id}/edit/files" in p for p in problems), problems
