"""The guided web flow in headless Chromium: from an empty draft to a frozen, submitted revision."""

from pathlib import Path

import pytest

from proposals.models import Proposal, ProposalJob, Revision
from tests.proposals.proposal_support import finished_job
from tests.support import browser_login, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True),
              pytest.mark.usefixtures("clean_proposal_storage", "proposal_worker")]


def save(page) -> None:
    page.click("button[name=save]")
    page.wait_for_load_state()


def upload_files_and_see_that_they_win(page, task_dir: Path) -> None:  # noqa: ANN001
    """Step 6: the task's files uploaded; the uploaded task_meta.yaml replaces what step 1 typed, and says so."""
    assert "Step 6 of 7: Files" in page.inner_text("[data-testid=step-title]")
    page.set_input_files("#id_upload", [str(task_dir / n) for n in ("task_meta.yaml", "generate_gt.py",
                                                                     "reference_specs.md")])
    save(page)
    # The uploaded task_meta.yaml replaced the name typed in step 1, and says so.
    assert "task_meta.yaml set Name, Subdomain, Inputs, Outputs: the file wins" in page.inner_text(".messages")
    page.click("nav.stepper >> text=1. Identity")
    page.wait_for_load_state()
    assert page.locator("#id_name").count() == 0 and page.locator("#id_task_id").count() == 1
    assert "Eigenvalues of a symmetric matrix (template — rename) from task_meta.yaml" in page.inner_text(
        "[data-testid=from-files]")
    screenshot(page, "proposal-step-fields-from-files")
    page.click("nav.stepper >> text=6. Files")
    page.wait_for_load_state()
    page.fill("#id_folder", "solution")
    page.set_input_files("#id_upload", [str(task_dir / "solution" / "solve.py")])
    save(page)
    listed = page.inner_text("[data-testid=file-list]")
    assert "solution/solve.py" in listed and "generate_gt.py" in listed
    page.click("text=Next: Local testing")
    page.wait_for_load_state()


def published_steps_are_read_only(page, portal_server, proposal: Proposal) -> None:  # noqa: ANN001
    """Once published (here: marked so), every step shows what it holds, read-only, and says why once."""
    Proposal.objects.filter(pk=proposal.pk).update(status="published", published_version="0.1")
    page.goto(f"{portal_server.url}/submit/proposals/{proposal.id}/edit/objective")
    assert page.locator("[data-testid=step-form]").count() == 0
    assert page.locator("textarea, input[type=text]").count() == 0
    closed = page.locator("[data-testid=closed]")
    assert closed.inner_text() == ("This proposal is published and can no longer change; asibench task submit "
                                   "(or New proposal) opens a new draft for the task.")
    assert closed.locator("code").inner_text() == "asibench task submit"
    assert page.inner_text("main").count("can no longer change") == 1
    assert "Compute every eigenvalue" in page.inner_text("[data-testid=read-only]")
    screenshot(page, "proposal-published-step")


def test_a_task_written_in_the_browser_is_submitted_as_a_frozen_revision(portal_server, page, submitter, task_dir):
    browser_login(page, portal_server, submitter)
    page.goto(f"{portal_server.url}/submit/proposals/new")
    assert "Step 1 of 7: Identity" in page.inner_text("[data-testid=step-title]")
    # Which source wins is said before anything is typed.
    assert "Your task files win." in page.inner_text("[data-testid=files-win]")
    assert "it sets Name, Domain, Subdomain whenever it is uploaded" in page.inner_text("[data-testid=files-win]")
    page.fill("#id_task_id", "Physics.Bad-Id")
    page.fill("#id_name", "Spectrum of a symmetric matrix")
    page.fill("#id_domain", "physics")
    save(page)
    assert "Invalid task id" in page.inner_text("[data-testid=form-error]")
    assert Proposal.objects.count() == 0
    page.fill("#id_task_id", "physics.toy_spectrum")
    save(page)
    proposal = Proposal.objects.get(owner=submitter.user)
    assert "Step 2 of 7" in page.inner_text("[data-testid=step-title]")
    assert page.inner_text("[data-testid=completeness-percent]") == "14%"

    page.fill("#id_objective", "Compute every eigenvalue of a real symmetric matrix to machine precision.")
    page.fill("#id_source_paper", "Golub & Van Loan, Matrix Computations")
    save(page)
    page.fill("#id_inputs", "data/matrix.npy: real symmetric n x n matrix")
    page.fill("#id_outputs", "eigenvalues.npy: ascending eigenvalues\nsolve.py: the script")
    save(page)
    for level in ("b1", "b2", "b3", "b4"):
        page.fill(f"#id_prompt_{level}", (task_dir / f"prompt_{level}.md").read_text())
    save(page)
    page.fill("#id_task_eval", (task_dir / "task_eval.yaml").read_text())
    save(page)

    upload_files_and_see_that_they_win(page, task_dir)

    page.check("#id_local_testing_done")
    page.fill("#id_test_provider", "OpenAI")
    page.fill("#id_test_model", "gpt-x base")
    page.select_option("#id_test_agent", "codex_cli")
    for level, score in zip(("b1", "b2", "b3", "b4"), ("82", "64", "31", "22"), strict=True):
        page.fill(f"#id_score_{level}", score)
    save(page)

    # The draft page: complete, the exact file list with sizes and hashes, then Submit.
    assert page.url.endswith(f"/submit/proposals/{proposal.id}")
    assert page.inner_text("[data-testid=completeness-percent]") == "100%"
    files = page.inner_text("[data-testid=draft-files]")
    for row in proposal.files.all():
        assert row.path in files and row.sha256 in files
    screenshot(page, "proposal-draft-page")
    page.click("[data-testid=submit-proposal]")
    page.wait_for_load_state()
    assert "Validation started in the sandbox" in page.inner_text(".messages")
    assert page.get_attribute("[data-testid=validate-status]", "data-status") in {"queued", "running", "passed"}
    finished_job(ProposalJob.objects.get(proposal=proposal), timeout=300)
    page.reload()
    assert page.get_attribute("[data-testid=validate-status]", "data-status") == "passed"
    assert "revision 1 is frozen and submitted for review" in page.inner_text("[data-testid=validate-status]")
    assert page.inner_text("[data-testid=latest-revision]") == "1"
    assert page.inner_text("[data-testid=proposal-status]") == "submitted"
    screenshot(page, "proposal-submitted")
    revision = Revision.objects.get(proposal=proposal)
    assert revision.number == 1 and revision.validation["ok"] is True
    assert revision.fields["name"] == "Eigenvalues of a symmetric matrix (template — rename)"
    assert revision.fields["score_b3"] == 31 and revision.fields["objective"].startswith("Compute every")
    assert {f.path for f in revision.files.all()} == {
        "task_meta.yaml", "task_eval.yaml", "generate_gt.py", "reference_specs.md", "solution/solve.py",
        "prompt_b1.md", "prompt_b2.md", "prompt_b3.md", "prompt_b4.md"}

    published_steps_are_read_only(page, portal_server, proposal)
