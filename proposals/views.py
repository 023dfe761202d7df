"""Pages: the guided flow, the owner's draft page, the maintainers' queue and review page."""

from __future__ import annotations

import io
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.files.storage import default_storage
from django.http import FileResponse, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from contracts import PROMPT_LEVELS
from contracts.digests import sha256_bytes, sha256_stream
from contracts.task_files import ALLOWED_EXTENSIONS, MAX_FILE_BYTES, MAX_TASK_BYTES, MAX_TASK_FILES
from portal.accounts.selectors import user_is_maintainer
from portal.errors import NotFound, PortalError
from portal.guides.faq import message_tag
from portal.guides.figures import count, size
from portal.pages import AuthedRequest, act_and_redirect, form_refusal, maintainer_only, not_found_page
from portal.uploads import upload_limit
from proposals import diffs, forms, rendering, revisions, selectors, services
from proposals.files import FILE_FIELDS, IncomingFile, blob_read
from proposals.models import Proposal, ProposalJob

# The file rules the upload step states, from the rules themselves (contracts.task_files).
FILE_RULES = {"types": " ".join(sorted(ALLOWED_EXTENSIONS)), "per_file": size(MAX_FILE_BYTES),
              "files": count(MAX_TASK_FILES), "total": size(MAX_TASK_BYTES)}

STEP_FORMS = {
    "identity": forms.IdentityForm,
    "objective": forms.ObjectiveForm,
    "io": forms.IoForm,
    "prompts": forms.PromptsForm,
    "scoring": forms.ScoringForm,
    "files": forms.FilesForm,
    "testing": forms.TestingForm,
}


def _text_file(name: str, text: str) -> IncomingFile:
    data = text.replace("\r\n", "\n").encode("utf-8")
    return IncomingFile(name, io.BytesIO(data), len(data), sha256_bytes(data))


def _file_text(proposal: Proposal, path: str) -> str:
    row = proposal.files.filter(path=path).first()
    if row is None:
        return ""
    try:
        return blob_read(row.blob).decode("utf-8")
    except UnicodeDecodeError:
        return ""


def _initial(proposal: Proposal | None, step: str) -> dict[str, Any]:
    if proposal is None or step == "files":
        return {}
    if step == "prompts":
        return {f"prompt_{lv}": _file_text(proposal, f"prompt_{lv}.md") for lv in PROMPT_LEVELS}
    if step == "scoring":
        return {"task_eval": _file_text(proposal, "task_eval.yaml"), "scoring_notes": proposal.scoring_notes}
    if step == "testing":
        initial = {name: getattr(proposal, name) for name in forms.TestingForm.base_fields}
        return {**initial, "test_sandbox": "os"}
    return {name: getattr(proposal, name) for name in STEP_FORMS[step].base_fields}


def _save_step(request: AuthedRequest, proposal: Proposal, step: str, data: dict[str, Any]) -> None:
    user = request.user
    if step == "prompts":
        services.proposal_file_write(user=user, proposal_id=proposal.id, files=[
            _text_file(f"prompt_{lv}.md", data[f"prompt_{lv}"]) for lv in PROMPT_LEVELS])
    elif step == "scoring":
        services.proposal_file_write(user=user, proposal_id=proposal.id,
                                     files=[_text_file("task_eval.yaml", data["task_eval"])])
        services.proposal_update_fields(user=user, proposal_id=proposal.id,
                                        fields={"scoring_notes": data["scoring_notes"]})
    elif step == "files":
        folder = (data.get("folder") or "").strip().strip("/")
        uploads = request.FILES.getlist("upload")
        if not uploads:
            raise PortalError("Choose one or more files to upload.", code="no_files")
        incoming = []
        for upload in uploads:  # temp files on disk (portal.uploads): hashed in chunks, never read whole
            digest, size = sha256_stream(upload)
            name = f"{folder}/{upload.name}" if folder else upload.name or ""
            incoming.append(IncomingFile(name, upload, size, digest))
        services.proposal_file_write(user=user, proposal_id=proposal.id, files=incoming)
    else:
        services.proposal_update_fields(user=user, proposal_id=proposal.id, fields=data)


# Names for fields whose form label is a sentence (a checkbox's), where a list names them.
_SHORT_LABELS = {"local_testing_done": "Local testing done"}


def _field_label(step: str, name: str) -> str:
    label = _SHORT_LABELS.get(name) or STEP_FORMS[step].base_fields[name].label
    return str(label or name.replace("_", " ").capitalize())


def _set_by_files(proposal: Proposal | None, step: str) -> dict[str, str]:
    """This step's fields that a task file sets now, and the file: the file wins (proposals.files.FILE_FIELDS)."""
    imported = proposal.imported_from if proposal else {}
    return {name: imported[name] for name in STEP_FORMS[step].base_fields if name in imported}


def _step_form(proposal: Proposal | None, step: str, *args: Any, **kwargs: Any) -> Any:
    """The step's form without the fields a task file sets: those are shown as the file has them."""
    form = STEP_FORMS[step](*args, **kwargs)
    for name in _set_by_files(proposal, step):
        del form.fields[name]
    return form


def _files_win(proposal: Proposal | None, step: str) -> dict[str, Any]:
    """The rule between this step's form and the task files, said up front, and what the files set now."""
    names = STEP_FORMS[step].base_fields
    sources = [{"file": file, "labels": [_field_label(step, n) for n in fields if n in names]}
               for file, fields in FILE_FIELDS.items()]
    return {"file_sources": [s for s in sources if s["labels"]],
            "from_files": [{"label": _field_label(step, name), "value": getattr(proposal, name), "source": source}
                           for name, source in _set_by_files(proposal, step).items()]}


def _label(name: str) -> str:
    step = next(key for key, form in STEP_FORMS.items() if name in form.base_fields)
    return _field_label(step, name)


def _said_files_set(before: dict[str, Any], proposal: Proposal) -> str:
    """' task_meta.yaml set Name and Domain.' for the fields an upload just changed (the file wins)."""
    changed: dict[str, list[str]] = {}
    for name in (name for fields in FILE_FIELDS.values() for name in fields):
        source = proposal.imported_from.get(name)
        if source and before.get(name) != getattr(proposal, name):
            changed.setdefault(source, []).append(_label(name))
    return "".join(f" {source} set {', '.join(labels)}: the file wins over the form."
                   for source, labels in changed.items())


def _read_only(proposal: Proposal, step: str) -> list[dict[str, Any]]:
    """What a step holds, for a proposal that can no longer change: labels and values, no form."""
    values = _initial(proposal, step)
    return [{"label": _field_label(step, name), "value": values.get(name), "key": name}
            for name in STEP_FORMS[step].base_fields if step != "files"]


def _step_context(proposal: Proposal | None, step: str, form: Any) -> dict[str, Any]:
    index = selectors.STEP_KEYS.index(step)
    closed = services.closed_reason(proposal) if proposal else None
    return {
        "closed": closed,
        "read_only": _read_only(proposal, step) if proposal and closed else [],
        **_files_win(proposal, step),
        "proposal": proposal,
        "step": step,
        "step_title": selectors.STEPS[index].title,
        "step_number": index + 1,
        "steps": selectors.STEPS,
        "next_step": selectors.STEP_KEYS[index + 1] if index + 1 < len(selectors.STEPS) else None,
        "form": form,
        "completeness": selectors.completeness(proposal) if proposal else None,
        "files": list(proposal.files.all()) if proposal and step == "files" else [],
        "file_rules": FILE_RULES,
    }


@login_required
@require_http_methods(["GET", "POST"])
def proposal_new(request: AuthedRequest) -> HttpResponse:
    form = _step_form(None, "identity", request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            proposal = services.proposal_create(owner=request.user, fields=form.cleaned_data)
        except PortalError as exc:
            form_refusal(form, exc)
        else:
            messages.success(request, "Draft created. Saved as you go: continue with the next step.")
            return redirect("proposal-step", proposal_id=proposal.id, step="objective")
    return render(request, "proposals/step.html", _step_context(None, "identity", form),
                  status=422 if form.errors else 200)


@upload_limit(lambda: MAX_TASK_BYTES, per_file=lambda: MAX_FILE_BYTES, refusal_code="set_too_large",
              file_refusal_code="file_too_large")
@login_required
@require_http_methods(["GET", "POST"])
def proposal_step(request: AuthedRequest, proposal_id: str, step: str) -> HttpResponse:
    try:
        proposal = selectors.proposal_get_for_owner(user=request.user, proposal_id=proposal_id)
        if step not in STEP_FORMS:
            raise NotFound(f"There is no step {step!r}.")
    except NotFound as exc:
        return not_found_page(request, exc)
    if request.method == "POST":
        form = _step_form(proposal, step, request.POST, request.FILES)
        if form.is_valid():
            before = {name: getattr(proposal, name) for name in revisions.FIELD_NAMES}
            try:
                _save_step(request, proposal, step, form.cleaned_data)
            except PortalError as exc:
                form_refusal(form, exc)
            else:
                proposal.refresh_from_db()
                messages.success(request, f"Saved: {selectors.STEPS[selectors.STEP_KEYS.index(step)].title}."
                                 + _said_files_set(before, proposal))
                if step == "files" or request.POST.get("stay"):
                    return redirect("proposal-step", proposal_id=proposal.id, step=step)
                index = selectors.STEP_KEYS.index(step)
                if index + 1 < len(selectors.STEP_KEYS):
                    return redirect("proposal-step", proposal_id=proposal.id, step=selectors.STEP_KEYS[index + 1])
                return redirect("proposal-detail", proposal_id=proposal.id)
        proposal.refresh_from_db()
    else:
        form = _step_form(proposal, step, initial=_initial(proposal, step))
    context = _step_context(proposal, step, form)
    # A closed proposal's step is shown read-only; a save posted to it (a stale tab) says why, once.
    status = 409 if context["closed"] and request.method == "POST" else 422 if form.errors else 200
    return render(request, "proposals/step.html", context, status=status)


@login_required
@require_POST
def proposal_file_delete(request: AuthedRequest, proposal_id: str) -> HttpResponse:
    path = request.POST.get("path", "")
    return act_and_redirect(
        request, lambda: services.proposal_file_delete(user=request.user, proposal_id=proposal_id, path=path),
        then=lambda: redirect("proposal-step", proposal_id=proposal_id, step="files"), success=f"Deleted {path}.")


@login_required
def proposal_list(request: AuthedRequest) -> HttpResponse:
    return render(request, "proposals/list.html", {
        "proposals": selectors.proposal_list_for_owner(request.user),
        "is_maintainer": user_is_maintainer(request.user),
    })


@login_required
def proposal_detail(request: AuthedRequest, proposal_id: str) -> HttpResponse:
    try:
        proposal = selectors.proposal_get_for_owner(user=request.user, proposal_id=proposal_id)
    except NotFound as exc:
        return not_found_page(request, exc)
    files = list(proposal.files.all())
    latest = selectors.latest_revision(proposal)
    frozen_as_is = bool(latest and proposal.status == Proposal.Status.SUBMITTED and latest.content_hash
                        == revisions.content_hash(revisions.frozen_fields(proposal), {f.path: f.sha256 for f in files}))
    return render(request, "proposals/detail.html", {
        "frozen_as_is": frozen_as_is,
        "validation_job": selectors.latest_job(proposal, ProposalJob.Kind.VALIDATE),
        "proposal": proposal,
        "files": files,
        "total_bytes": sum(f.size for f in files),
        "completeness": selectors.completeness(proposal),
        "problems": revisions.freeze_problems(proposal) if proposal.is_editable else [],
        "revisions": list(proposal.revisions.order_by("-number")),
        "history": selectors.history(proposal),
        "comment_form": forms.CommentForm(),
        "steps": selectors.STEPS,
        "imported": [(k, v) for k, v in sorted(proposal.imported_from.items())],
    })


@login_required
@require_POST
def proposal_submit(request: AuthedRequest, proposal_id: str) -> HttpResponse:
    def said(job: ProposalJob) -> str:
        if job.status == job.Status.PASSED:
            return f"Revision {job.outcome} is frozen and submitted for review."
        return ("Validation started in the sandbox; this page shows its result, and the revision is frozen "
                "when it passes.")

    return act_and_redirect(
        request, lambda: services.proposal_submit(user=request.user, proposal_id=proposal_id),
        then=lambda: redirect("proposal-detail", proposal_id=proposal_id), success=said)


@login_required
@require_POST
def proposal_comment(request: AuthedRequest, proposal_id: str) -> HttpResponse:
    back = "proposal-review" if request.POST.get("next") == "review" else "proposal-detail"
    return act_and_redirect(
        request,
        lambda: services.proposal_comment(user=request.user, proposal_id=proposal_id,
                                          text=request.POST.get("text", "")),
        then=lambda: redirect(back, proposal_id=proposal_id))


# ------------------------------------------------------------------ maintainers
@login_required
@maintainer_only
def proposal_review_queue(request: HttpRequest) -> HttpResponse:
    return render(request, "proposals/queue.html", {"proposals": selectors.proposal_review_queue()})


@login_required
@maintainer_only
def proposal_review_page(request: AuthedRequest, proposal_id: str) -> HttpResponse:
    try:
        proposal = selectors.proposal_get_for_review(user=request.user, proposal_id=proposal_id)
    except NotFound as exc:
        return not_found_page(request, exc)
    revisions = list(proposal.revisions.order_by("number"))
    wanted = request.GET.get("revision")
    revision = next((r for r in revisions if str(r.number) == wanted), revisions[-1] if revisions else None)
    previous = next((r for r in reversed(revisions) if revision and r.number < revision.number), None)
    current_files = list(revision.files.all()) if revision else []
    return render(request, "proposals/review.html", {
        "proposal": proposal,
        "revision": revision,
        "revisions": revisions,
        "previous": previous,
        "shown": rendering.shown_files(current_files),
        "diff": diffs.revision_diff_for_review(previous, revision) if previous and revision else None,
        "history": selectors.history(proposal),
        "is_latest": bool(revision and revision.number == revisions[-1].number),
        "revision_version": selectors.revision_version(revision) if revision else None,
        "difficulty_problems": selectors.revision_difficulty_problems(revision) if revision else [],
        "task_id_problem": selectors.task_id_taken_problem(task_id=revision.fields["task_id"],
                                                           owner_id=proposal.owner_id) if revision else None,
        "decision_form": forms.DecisionForm(initial={"revision": revision.number if revision else 0}),
        "publish_form": forms.PublishForm(),
        "publish_job": selectors.latest_job(proposal, ProposalJob.Kind.PUBLISH),
        "comment_form": forms.CommentForm(),
    })


@login_required
@require_POST
@maintainer_only
def proposal_review_decide(request: AuthedRequest, proposal_id: str) -> HttpResponse:
    form = forms.DecisionForm(request.POST)

    def decide() -> object:
        if not form.is_valid():
            raise PortalError("Choose a decision and give a reason.", code="invalid")
        return services.proposal_decide(maintainer=request.user, proposal_id=proposal_id,
                                        revision_number=form.cleaned_data["revision"],
                                        decision=form.cleaned_data["decision"], reason=form.cleaned_data["reason"])

    return act_and_redirect(request, decide, then=lambda: redirect("proposal-review", proposal_id=proposal_id),
                            success="Decision recorded; the author was notified by email.")


@login_required
@require_POST
@maintainer_only
def proposal_review_publish(request: AuthedRequest, proposal_id: str) -> HttpResponse:
    form = forms.PublishForm(request.POST)
    try:
        if not form.is_valid():
            raise PortalError("Choose at least one dataset.", code="datasets_required")
        services.proposal_publish(maintainer=request.user, proposal_id=proposal_id,
                                  dataset_names=form.cleaned_data["datasets"], status=form.cleaned_data["status"])
    except NotFound as exc:
        return not_found_page(request, exc)
    except PortalError as exc:
        messages.error(request, exc.detail, extra_tags=message_tag(exc.code))
    else:
        messages.success(request, "Publishing started: instances are generated in the sandbox, then the catalog "
                                  "switches to the new version at once. This page shows the result.")
    return redirect("proposal-review", proposal_id=proposal_id)


@login_required
@require_http_methods(["GET", "HEAD"])
def proposal_revision_file(request: AuthedRequest, proposal_id: str, number: int, path: str) -> HttpResponseBase:
    """One file of a frozen revision as a download (never rendered: the author wrote it), for the files the
    review page does not show or diff."""
    try:
        row = selectors.revision_file_get(user=request.user, proposal_id=proposal_id, number=number, path=path)
    except NotFound as exc:
        return not_found_page(request, exc)
    return FileResponse(default_storage.open(row.blob, "rb"), as_attachment=True,
                        filename=f"r{number}-{row.path.replace('/', '__')}", content_type="application/octet-stream")
