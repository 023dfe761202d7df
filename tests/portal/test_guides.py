"""The guides: Markdown from the repository with figures taken from settings, a refusals FAQ that has
an entry for every reason code the intake can return, and refusals (API and pages) that link to it."""

import ast
import re
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

import proposals
from contracts import sandbox_policy, task_files
from portal.guides import selectors
from portal.guides.faq import FAQ_FILE, faq_codes, help_path
from portal.guides.figures import UnknownFigure, fill_figures
from portal.submissions import apis as submission_apis
from portal.submissions import bundle_verify
from portal.submissions import services as submission_services
from portal.submissions.models import Submission, SubmissionEntry
from tests.leaderboard.factories import make_catalog
from tests.support import issue_token

pytestmark = pytest.mark.django_db

GUIDE_PATHS = ["/guides/", *[g.url for g in selectors.guide_list()]]


def _codes_passed_on(tree: ast.Module) -> dict[str, int]:
    """Functions of the module that take a `code` parameter: name -> its position."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            names = [a.arg for a in node.args.args]
            if "code" in names:
                out[node.name] = names.index("code")
    return out


def verifier_reason_codes() -> set[str]:
    """Every code `bundle_verify` can raise, read from its source: a literal first argument of
    BundleRejected, or a literal handed to a helper that passes its `code` parameter on."""
    trees = [ast.parse(path.read_text()) for path in sorted(Path(bundle_verify.__file__).parent.glob("*.py"))]
    helpers = {name: position for tree in trees for name, position in _codes_passed_on(tree).items()}
    codes: set[str] = set()
    for call in (node for tree in trees for node in ast.walk(tree)):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
            continue
        position = 0 if call.func.id == "BundleRejected" else helpers.get(call.func.id)
        if position is None:
            continue
        codes |= _literal_codes(call.args[position], call)
    return codes


def _literal_codes(arg: ast.expr, call: ast.Call) -> set[str]:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return {arg.value}
    if isinstance(arg, ast.IfExp):
        return _literal_codes(arg.body, call) | _literal_codes(arg.orelse, call)
    if ast.unparse(arg) == "refusal[0]":  # the (code, message) of contracts.sandbox_policy.sandbox_refusal
        return _returned_codes(Path(sandbox_policy.__file__), "sandbox_refusal")
    # Anything else must be a helper's own `code` parameter, passed through (its callers are read);
    # a code computed some other way fails here, so that this test is taught to read it.
    assert isinstance(arg, ast.Name) and arg.id == "code", ast.unparse(call)
    return set()


def _returned_codes(module: Path, function: str) -> set[str]:
    """The literal first items of the (code, message) tuples `function` returns."""
    [node] = [n for n in ast.walk(ast.parse(module.read_text()))
              if isinstance(n, ast.FunctionDef) and n.name == function]
    codes = set()
    for ret in (n for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None):
        if isinstance(ret.value, ast.Constant) and ret.value.value is None:
            continue
        assert isinstance(ret.value, ast.Tuple) and isinstance(ret.value.elts[0], ast.Constant), ast.unparse(ret)
        codes.add(ret.value.elts[0].value)
    return codes


def service_reason_codes() -> set[str]:
    """Codes the intake and confirm services raise: each PortalError's code= or its class default."""
    from portal import errors

    classes = {name: cls for name, cls in vars(errors).items()
               if isinstance(cls, type) and issubclass(cls, errors.PortalError)}
    classes["BundleRefused"] = submission_services.BundleRefused
    tree = ast.parse(Path(submission_services.__file__).read_text())
    codes: set[str] = set()
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id in classes:
            code = next((k.value for k in call.keywords if k.arg == "code"), None)
            if code is None:
                codes.add(classes[call.func.id].code)
            elif isinstance(code, ast.Constant):
                codes.add(code.value)
            else:  # the verifier's code, handed on (covered above)
                assert ast.unparse(code) == "exc.code", ast.unparse(call)
    return codes - {"not_found", "invalid"}  # "no such submission", "already confirmed": no FAQ needed


def test_every_reason_code_the_intake_can_return_has_an_faq_entry():
    verifier = verifier_reason_codes()
    # The enumeration itself works: codes of every stage are found, the newest ones included.
    assert {"not_gzip", "multi_member_gzip", "ambiguous_name", "hash_mismatch", "sandbox_policy",
            "bad_result_json", "bad_manifest", "ratio_exceeded"} <= verifier
    services = service_reason_codes()
    assert {"too_large", "no_dataset", "confirm_quota", "too_many_results"} <= services
    throttled = {"throttled"} if submission_apis.UploadThrottle in submission_apis.BundleUploadApi.throttle_classes \
        else set()
    missing = sorted((verifier | services | throttled) - faq_codes())
    assert not missing, f"reason codes without an FAQ entry in docs/faq.md: {missing}"


PROPOSAL_MODULES = sorted(Path(proposals.__file__).parent.glob("*.py")) + [Path(task_files.__file__)]
# Refusals of a maintainer's own review actions (decide, publish), not of anything an author sent: their
# pages say what to do, and the public FAQ does not explain the review tools. And "no such proposal".
MAINTAINER_ONLY = {"bad_decision", "reason_required", "stale_revision", "not_submitted", "not_accepted",
                   "datasets_required", "bad_status", "publishing", "publish_failed", "catalog_task", "invalid"}


def proposal_reason_codes() -> set[str]:
    """Every code the proposal flow can refuse with (web, API, CLI sync and the client's own checks), read
    from the source: a PortalError's literal `code=`, or a TaskFileError's literal second argument."""
    from portal import errors

    classes = {name for name, cls in vars(errors).items()
               if isinstance(cls, type) and issubclass(cls, errors.PortalError)}
    codes: set[str] = set()
    for module in PROPOSAL_MODULES:
        for call in ast.walk(ast.parse(module.read_text())):
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
                continue
            if call.func.id in classes:
                code = next((k.value for k in call.keywords if k.arg == "code"), None)
                if isinstance(code, ast.Constant):
                    codes.add(code.value)
                else:  # a TaskFileError's code handed on (read below), or none: the class default
                    assert code is None or ast.unparse(code) == "exc.code", f"{module.name}: {ast.unparse(call)}"
            elif call.func.id == "TaskFileError":
                assert isinstance(call.args[1], ast.Constant), f"{module.name}: {ast.unparse(call)}"
                codes.add(call.args[1].value)
    return codes - {"not_found", "proposal_not_found"}


def faq_entry(code: str) -> str:
    text = FAQ_FILE.read_text()
    start = text.index(f"{{#{code}}}")
    end = text.find("\n### ", start)
    return text[start:end if end > 0 else len(text)]


def test_every_reason_code_a_proposal_can_get_has_an_faq_entry():
    codes = proposal_reason_codes()
    # The enumeration works: the web flow's, the file API's, the sync's and the client's own codes are found.
    assert {"bad_task_id", "yaml_alias", "stale_snapshot", "browser_edits", "too_many_files", "file_type",
            "symlink", "collision", "bad_content_type", "length_required", "task_id_taken", "no_files"} <= codes
    assert MAINTAINER_ONLY <= codes, MAINTAINER_ONLY - codes  # the exclusions are real codes, kept current
    missing = sorted(codes - MAINTAINER_ONLY - faq_codes())
    assert not missing, f"proposal reason codes without an FAQ entry in docs/faq.md: {missing}"
    assert not (MAINTAINER_ONLY - {"invalid"}) & faq_codes()


def test_a_code_shared_by_bundles_and_proposals_is_explained_for_both():
    intake = verifier_reason_codes() | service_reason_codes()
    shared = proposal_reason_codes() & intake
    assert {"bad_path", "file_too_large"} <= shared
    assert "no_dataset" not in shared  # the intake's "no dataset generated yet" is not a maintainer's empty choice
    for code in shared:
        assert "task proposal" in faq_entry(code), f"the {code} entry explains bundles only"


def test_every_guide_is_linked_from_the_navigation_and_renders(client):
    home = client.get("/").content.decode()
    assert 'href="/guides/"' in home
    index = client.get("/guides/").content.decode()
    for guide in selectors.guide_list():
        assert f'href="{guide.url}"' in index
        page = client.get(guide.url)
        assert page.status_code == 200, guide.url
        text = page.content.decode()
        assert not re.search(r"\{\{\s*figure:[a-z0-9_]+", text) and "<script" not in text, guide.url
        assert f"<h1>{guide.title}</h1>" in text.replace("&#x27;", "'")
        assert text.count("<h1>") == 1, guide.url  # the file's own `# Title` is the page's heading, once
    assert client.get("/guides/no-such-guide/").status_code == 404


def test_figures_come_from_settings_not_from_the_text(client, settings):
    settings.CONFIRMS_PER_DAY_LIMIT = 13
    settings.RESULTS_PER_BUNDLE_LIMIT = 777
    settings.BUNDLE_MAX_COMPRESSED_BYTES = 3 * 1024 * 1024
    settings.DRAFT_TTL_HOURS = 36
    settings.DATASET_SANDBOX_MODES = {**settings.DATASET_SANDBOX_MODES, "seed42": ["os"]}
    submit = client.get("/guides/submit-results/").content.decode()
    assert "| compressed bundle |" not in submit  # rendered as a table, not left as Markdown
    for text in ("13 in any 24 hours per account", "777", "3 MiB", "36 hours", "<code>os</code>"):
        assert text in submit, text
    assert re.search(r"<td><code>seed42</code></td>\s*<td><code>os</code></td>", submit)
    faq = client.get("/guides/faq/").content.decode()
    assert "Each account may confirm 13 runs in any 24 hours" in faq


def test_windows_and_path_limits_are_figures_too(client, settings, monkeypatch):
    from portal.guides import figures

    settings.QUOTA_WINDOW_HOURS = 12
    settings.CONFIRMS_PER_DAY_LIMIT = 13
    settings.PROPOSAL_VALIDATIONS_PER_DAY = 4
    monkeypatch.setattr(figures, "MAX_COMPONENT_BYTES", 254)
    monkeypatch.setattr(figures, "MAX_ATTEMPT", 999)
    settings.BOARD_INTERVAL_CONFIDENCE = 0.9
    pages = {g.slug: re.sub(r"\s+", " ", client.get(g.url).content.decode()) for g in selectors.guide_list()}
    assert "13 in any 12 hours per account" in pages["submit-results"]
    assert "Each account may confirm 13 runs in any 12 hours" in pages["faq"]
    assert "confirms in any 12 hours," in pages["faq"] and "4 pre-submit validations in any 12 hours" in pages["faq"]
    assert "4 validations in any 12 hours" in pages["contribute-a-task"]
    assert "per account in any 12 hours" in pages["how-scoring-works"] and "a 90% <strong>bootstrap" in pages[
        "how-scoring-works"]
    assert "each folder or file name at most 254 bytes" in pages["faq"] and "between 1 and 999," in pages["faq"]
    assert not any("24 hours" in page for page in pages.values())


def test_a_figure_must_be_known_and_prompt_placeholders_are_left_alone():
    with pytest.raises(UnknownFigure):
        fill_figures("at most {{ figure:confirms_a_day }} a day")
    assert fill_figures("each {{ n_bodies }} and {{figure:confirms_per_day}}").startswith("each {{ n_bodies }} and ")


def test_faq_entries_have_the_code_as_their_anchor(client):
    faq = client.get("/guides/faq/").content.decode()
    anchors = set(re.findall(r'<h3 id="([a-z0-9_]+)">', faq))
    assert anchors == set(faq_codes())
    assert '<h3 id="hash_mismatch"><code>hash_mismatch</code>' in faq
    assert help_path("hash_mismatch") == "/guides/faq/#hash_mismatch"
    assert help_path("not_found") is None and help_path(None) is None


def test_a_refused_api_upload_carries_a_help_url_to_its_entry(submitter):
    make_catalog()
    client = Client()
    response = client.generic("POST", "/api/v1/submissions/bundle", b"PK\x03\x04 a zip, not a bundle",
                              content_type="application/gzip",
                              HTTP_AUTHORIZATION=f"Bearer {issue_token(submitter.user)}")
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "not_gzip" and body["detail"].startswith("Bundle refused (not_gzip)")
    assert body["help_url"] == "http://testserver/guides/faq/#not_gzip"
    assert list(body)[:2] == ["detail", "code"]  # the official client reads detail; fields are only added


def test_errors_without_an_entry_get_no_help_url(submitter):
    client = Client()
    token = issue_token(submitter.user)
    missing = client.get(f"/api/v1/submissions/{uuid.uuid4()}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    assert "help_url" not in missing.json()
    unauthenticated = client.get("/api/v1/me")
    assert unauthenticated.status_code in (401, 403) and "help_url" not in unauthenticated.json()


def test_the_upload_page_links_a_refusal_to_its_entry(submitter):
    from django.core.files.uploadedfile import SimpleUploadedFile

    make_catalog()
    client = Client()
    client.force_login(submitter.user)
    page = client.post("/submit/submit-results",
                       {"bundle": SimpleUploadedFile("run.tar.gz", b"plain text", "application/gzip")})
    assert page.status_code == 422
    html = page.content.decode()
    assert "Bundle refused (not_gzip)" in html
    assert '<a href="/guides/faq/#not_gzip" data-testid="error-help">' in html


def test_a_refused_confirm_links_its_entry_on_the_run_page(submitter, settings):
    settings.CONFIRMS_PER_DAY_LIMIT = 1
    instances = make_catalog()["seed42"]

    def draft() -> Submission:
        run = Submission.objects.create(owner=submitter.user, dataset_id="seed42", archive="submissions/x",
                                        archive_sha256=uuid.uuid4().hex * 2, archive_bytes=1,
                                        expires_at=timezone.now() + timedelta(days=1))
        SubmissionEntry.objects.create(submission=run, base_name=f"{instances[0].instance_id}__b1",
                                       instance=instances[0], task_id=instances[0].task_id, prompt_level="b1")
        return run

    first, second = draft(), draft()
    client = Client()
    client.force_login(submitter.user)
    client.post(f"/submit/submissions/{first.id}/confirm")
    html = client.post(f"/submit/submissions/{second.id}/confirm", follow=True).content.decode()
    assert "the limit is 1 a day" in html
    assert '<a href="/guides/faq/#confirm_quota" data-testid="message-help">' in html
    # A success message has no such link.
    assert html.count('data-testid="message-help"') == 1


def test_the_error_page_links_a_code_only_when_the_faq_has_it(rf):
    from django.contrib.auth.models import AnonymousUser

    from portal.pages import error_page

    request = rf.get("/")
    request.user = AnonymousUser()
    assert b'href="/guides/faq/#too_many_results"' in error_page(request, "x", 400, code="too_many_results").content
    assert b"error-help" not in error_page(request, "x", 404, code="not_found").content


def test_an_oversized_browser_upload_links_the_size_limit_entry(submitter, settings):
    settings.BUNDLE_MAX_COMPRESSED_BYTES = 10_000
    client = Client()
    client.force_login(submitter.user)
    from django.core.files.uploadedfile import SimpleUploadedFile

    page = client.post("/submit/submit-results",
                       {"bundle": SimpleUploadedFile("run.tar.gz", b"\x1f\x8b" + b"0" * 200_000, "application/gzip")})
    assert page.status_code == 413
    assert b'<a href="/guides/faq/#too_large" data-testid="error-help">' in page.content


# --- proposal pages and maintainers' messages link their entries too ---------------------------------

def proposal_page(submitter) -> tuple[Client, str]:
    from proposals import services as proposals

    client = Client()
    client.force_login(submitter.user)
    draft = proposals.proposal_create(owner=submitter.user, fields={"task_id": "physics.toy", "name": "Toy",
                                                                    "domain": "physics"})
    return client, f"/submit/proposals/{draft.id}/edit/files"


def test_the_proposal_upload_steps_size_refusals_link_their_entries(submitter):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

    client, url = proposal_page(submitter)
    assert "at most 10 MiB a file, 1,000 files, 100 MiB in all" in client.get(url).content.decode()
    # Past the whole set's cap: refused by its Content-Length before a byte is read.
    body = encode_multipart(BOUNDARY, {"upload": SimpleUploadedFile("a.txt", b"x")})
    page = client.generic("POST", url, body, content_type=MULTIPART_CONTENT,
                          CONTENT_LENGTH=str(task_files.MAX_TASK_BYTES + 10 * 1024 * 1024))
    assert page.status_code == 413
    assert '<a href="/guides/faq/#set_too_large" data-testid="error-help">' in page.content.decode()
    # One file past its own cap, within the set's: stopped while it streams in.
    big = SimpleUploadedFile("big.npy", b"\0" * (task_files.MAX_FILE_BYTES + 1))
    page = client.post(url, {"upload": big})
    assert page.status_code == 413 and "big.npy is larger than" in page.content.decode()
    assert '<a href="/guides/faq/#file_too_large" data-testid="error-help">' in page.content.decode()


def test_a_refusal_shown_on_a_proposal_form_links_its_entry(submitter):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client, url = proposal_page(submitter)
    page = client.post(url, {"upload": SimpleUploadedFile("notes.docx", b"x")})
    assert page.status_code == 422 and "Task file type .docx is not supported" in page.content.decode()
    assert '<a href="/guides/faq/#file_type" data-testid="error-help">' in page.content.decode()
    # The first step: another open draft for the same task id.
    page = client.post("/submit/proposals/new", {"task_id": "physics.toy", "name": "Again", "domain": "physics"})
    assert page.status_code == 422 and "already have an open draft" in page.content.decode()
    assert '<a href="/guides/faq/#draft_exists" data-testid="error-help">' in page.content.decode()


def test_a_refused_token_links_its_entry_on_the_settings_page(submitter):
    from allauth.account.models import EmailAddress

    EmailAddress.objects.filter(user=submitter.user).update(verified=False)
    client = Client()
    client.force_login(submitter.user)
    page = client.post("/submit/settings", {"name": "laptop", "expires_in_days": "30", "scope": "submit"})
    assert "verif" in page.content.decode()
    assert '<a href="/guides/faq/#email_unverified" data-testid="error-help">' in page.content.decode()
