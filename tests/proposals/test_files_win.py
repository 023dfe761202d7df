"""One rule between the guided flow's forms and the task files, said up front on every step: the files win.
A closed proposal shows what it holds read-only, with no form, and says why once. Publishing keeps the
author's version."""

import hashlib
import io
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from portal.errors import Conflict, ValidationFailed
from proposals import publishing, revisions, services
from proposals.files import FILE_FIELDS, IncomingFile, imported_fields
from proposals.models import Proposal
from tests.proposals.proposal_support import task_files

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("clean_proposal_storage")]

STEPS = ("identity", "objective", "io", "prompts", "scoring", "files", "testing")


def incoming(files: dict[str, bytes]) -> list[IncomingFile]:
    return [IncomingFile(n, io.BytesIO(d), len(d), hashlib.sha256(d).hexdigest()) for n, d in files.items()]


def typed_draft(user) -> Proposal:
    return services.proposal_create(owner=user, fields={
        "task_id": "physics.toy_spectrum", "name": "My own name", "domain": "physics", "subdomain": "typed",
        "objective": "Typed objective.", "inputs": "typed inputs", "outputs": "typed outputs"})


def signed_in(persona) -> Client:
    client = Client()
    client.force_login(persona.user)
    return client


def text_of(html: str) -> str:
    return re.sub(r" ([,.;:)])", r"\1", " ".join(re.sub(r"<[^>]+>", " ", html).split()))


def test_the_fields_a_file_can_set_are_the_ones_it_sets(task_dir):
    values, origin = imported_fields(task_files(task_dir))
    assert set(origin) == {f for fields in FILE_FIELDS.values() for f in fields} - {"source_paper", "source_repo"}
    assert all(field in FILE_FIELDS[source] for field, source in origin.items())


def test_an_uploaded_task_meta_wins_over_typed_fields_which_then_cannot_be_typed_over(submitter, task_dir):
    proposal = typed_draft(submitter.user)
    meta = task_files(task_dir)["task_meta.yaml"]
    services.proposal_file_write(user=submitter.user, proposal_id=proposal.id, files=incoming({"task_meta.yaml": meta}))
    proposal.refresh_from_db()
    assert proposal.name == "Eigenvalues of a symmetric matrix (template — rename)"
    assert (proposal.subdomain, proposal.imported_from["name"]) == ("template", "task_meta.yaml")
    assert proposal.objective == "Typed objective."  # no file sets it here: still the author's

    with pytest.raises(ValidationFailed) as refused:
        services.proposal_update_fields(user=submitter.user, proposal_id=proposal.id, fields={"name": "Typed again"})
    assert refused.value.code == "field_from_file"
    assert refused.value.detail == ("name is set by task_meta.yaml, and the task files win over the form: edit the "
                                    "file and upload it again to change it.")
    services.proposal_update_fields(user=submitter.user, proposal_id=proposal.id,
                                    fields={"name": proposal.name, "objective": "Edited objective."})
    assert Proposal.objects.get(pk=proposal.pk).objective == "Edited objective."

    # Without the file the fields keep the file's values and are the author's to type again.
    services.proposal_file_delete(user=submitter.user, proposal_id=proposal.id, path="task_meta.yaml")
    proposal.refresh_from_db()
    assert proposal.imported_from == {} and proposal.name.startswith("Eigenvalues")
    services.proposal_update_fields(user=submitter.user, proposal_id=proposal.id, fields={"name": "Typed again"})
    assert Proposal.objects.get(pk=proposal.pk).name == "Typed again"


def test_every_step_says_up_front_which_source_wins_and_shows_file_set_fields_as_the_file_has_them(
        submitter, task_dir):
    client = signed_in(submitter)
    new = client.get("/submit/proposals/new").content.decode()
    assert "Your task files win." in text_of(new)
    assert "task_meta.yaml (or task.yaml), it sets Name, Domain, Subdomain whenever it is uploaded" in text_of(new)

    proposal = typed_draft(submitter.user)
    before = {step: client.get(f"/submit/proposals/{proposal.id}/edit/{step}").content.decode() for step in STEPS}
    assert 'name="name"' in before["identity"] and 'data-testid="from-files"' not in before["identity"]
    for step in STEPS:
        assert 'data-testid="files-win"' in before[step], step

    files = task_files(task_dir)
    response = client.post(f"/submit/proposals/{proposal.id}/edit/files", {
        "folder": "", "upload": [SimpleUploadedFile(n, files[n]) for n in ("task_meta.yaml", "task_submission.yaml")],
        "save": "1"}, follow=True)
    said = " ".join(str(m) for m in response.context["messages"])
    assert said == ("Saved: Files. task_meta.yaml set Name, Subdomain, Inputs, Outputs: the file wins over the form. "
                    "task_submission.yaml set Scientific objective, Core method, Local testing done, Provider, Model, "
                    "Agent harness, Sandbox, B1 score, B2 score, B3 score, B4 score: the file wins over the form.")
    # (Domain is not said: the domain typed was the file's already.)

    identity = client.get(f"/submit/proposals/{proposal.id}/edit/identity").content.decode()
    assert 'name="name"' not in identity and 'name="subdomain"' not in identity and 'name="task_id"' in identity
    shown = text_of(re.search(r'data-testid="from-files">(.*?)</dl>', identity, re.S).group(1))
    assert "Name Eigenvalues of a symmetric matrix (template — rename) from task_meta.yaml" in shown
    # Saving the step keeps the file's values: the form no longer carries them.
    client.post(f"/submit/proposals/{proposal.id}/edit/identity", {"task_id": "physics.toy_spectrum", "stay": "1"})
    assert Proposal.objects.get(pk=proposal.pk).name.startswith("Eigenvalues")
    testing = client.get(f"/submit/proposals/{proposal.id}/edit/testing").content.decode()
    assert 'name="score_b3"' not in testing and "from task_submission.yaml" in testing


def test_a_published_proposal_shows_its_content_read_only_and_says_why_once(submitter, task_dir):
    proposal = typed_draft(submitter.user)
    files = task_files(task_dir)
    services.proposal_file_write(user=submitter.user, proposal_id=proposal.id,
                                 files=incoming({n: files[n] for n in ("prompt_b1.md", "task_eval.yaml")}))
    Proposal.objects.filter(pk=proposal.pk).update(status="published", published_version="0.1")
    client = signed_in(submitter)
    for step in STEPS:
        page = client.get(f"/submit/proposals/{proposal.id}/edit/{step}").content.decode()
        assert 'data-testid="step-form"' not in page and "<textarea" not in page and "<input type=\"file\"" not in page
        assert 'data-testid="closed"' in page, step
        assert page.count("can no longer change") == 1, step
        notice = re.search(r'data-testid="closed">(.*?)</p>', page, re.S).group(1)
        assert "`" not in notice and "<code>asibench task submit</code>" in notice, step  # code, not backticks
    identity = client.get(f"/submit/proposals/{proposal.id}/edit/identity").content.decode()
    assert "My own name" in text_of(re.search(r'data-testid="read-only">(.*?)</dl>', identity, re.S).group(1))
    prompts = client.get(f"/submit/proposals/{proposal.id}/edit/prompts").content.decode()
    assert "Eigenvalues" in prompts and 'class="source"' in prompts
    assert "delete</button>" not in client.get(f"/submit/proposals/{proposal.id}/edit/files").content.decode()

    # A save posted from a page opened before publication is refused, and the refusal is said once.
    response = client.post(f"/submit/proposals/{proposal.id}/edit/identity",
                           {"task_id": "physics.toy_spectrum", "name": "Changed", "domain": "physics", "save": "1"})
    page = response.content.decode()
    assert response.status_code == 409 and page.count("can no longer change") == 1
    assert "This proposal is published and can no longer change" in text_of(page)
    assert 'data-testid="step-form"' not in page and Proposal.objects.get(pk=proposal.pk).name == "My own name"
    with pytest.raises(Conflict):
        services.proposal_update_fields(user=submitter.user, proposal_id=proposal.id, fields={"objective": "x"})


def test_closed_messages_render_their_commands_as_code(submitter, task_dir):
    proposal = typed_draft(submitter.user)
    Proposal.objects.filter(pk=proposal.pk).update(status="rejected")
    client = signed_in(submitter)
    response = client.post(f"/submit/proposals/{proposal.id}/files/delete", {"path": "x"}, follow=True)
    messages = re.search(r'<ul class="messages">(.*?)</ul>', response.content.decode(), re.S).group(1)
    assert "<code>asibench task submit</code>" in messages and "`" not in messages
    assert messages.count("can no longer change") == 1


def test_publishing_keeps_the_authors_version_and_only_sets_the_status(submitter, task_dir):
    meta = task_files(task_dir)["task_meta.yaml"].decode()
    out = publishing.set_status(meta, "final")
    assert out == meta.replace("status: in_development", "status: final")
    assert 'version: "0.1"' in out
    # A layout the line edit cannot change safely is rewritten whole, still with the author's version.
    flow = publishing.set_status('{id: physics.x, version: "2.3", status: sample}\n', "final")
    assert "version: '2.3'" in flow and "status: final" in flow


def test_publishing_refuses_a_version_it_would_have_to_change(submitter, task_dir, settings, tmp_path):
    settings.TASKS_DIR = tmp_path / "no_repo_tasks"
    files = task_files(task_dir)
    files["task_meta.yaml"] = files["task_meta.yaml"].replace(b'version: "0.1"', b'version: "1.2.3.4.5.6.7.8.9.10.11"')
    proposal = services.proposal_cli_open(owner=submitter.user, task_id="physics.toy_spectrum", name="Toy",
                                          domain="physics", subdomain=None).proposal
    proposal = services.proposal_files_sync(user=submitter.user, proposal_id=proposal.id, files=incoming(files),
                                            base_snapshot=proposal.snapshot, force=False)
    revision = revisions.revision_freeze(proposal, submitter.user, {"ok": True, "checks": []})
    with pytest.raises(ValidationFailed) as refused:
        publishing.publish_revision(revision, dataset_names=["seed42"])
    assert "'1.2.3.4.5.6.7.8.9.10.11' must look like 1, 1.0 or 1.2.3, in at most 20 characters" in refused.value.detail
    assert not (tmp_path / "published").exists() or not any((tmp_path / "published").rglob("task_meta.yaml"))
