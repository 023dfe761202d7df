"""Task proposals: an author's working draft, its files, frozen revisions and the review trail.

The draft (Proposal fields + ProposalFile rows) is the editable working copy. Submitting
freezes it into a Revision: an immutable copy of every field and file with a content hash.
File bytes live in Django storage, content-addressed per proposal, so a revision and the
draft share the blob of an unchanged file and a blob is never rewritten.
"""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone


class Proposal(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft"
        SUBMITTED = "submitted"
        CHANGES_REQUESTED = "changes_requested", "Changes requested"
        ACCEPTED = "accepted"
        REJECTED = "rejected"
        PUBLISHED = "published"

    EDITABLE = (Status.DRAFT, Status.SUBMITTED, Status.CHANGES_REQUESTED)

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="proposals")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DRAFT, db_index=True)
    # Identity
    task_id = models.CharField(max_length=120, blank=True, db_index=True)
    name = models.CharField(max_length=200, blank=True)
    domain = models.CharField(max_length=50, blank=True)
    subdomain = models.CharField(max_length=200, blank=True)
    # Scientific objective and source
    objective = models.TextField(blank=True)
    core_method = models.TextField(blank=True)
    source_paper = models.CharField(max_length=500, blank=True)
    source_repo = models.CharField(max_length=500, blank=True)
    # Inputs, outputs and scoring, in words (the contract itself is task_eval.yaml)
    inputs = models.TextField(blank=True)
    outputs = models.TextField(blank=True)
    scoring_notes = models.TextField(blank=True)
    # Local testing (from the web form or imported from task_submission.yaml)
    local_testing_done = models.BooleanField(default=False)
    test_provider = models.CharField(max_length=120, blank=True)
    test_model = models.CharField(max_length=120, blank=True)
    test_agent = models.CharField(max_length=60, blank=True)
    test_sandbox = models.CharField(max_length=20, blank=True)
    score_b1 = models.FloatField(null=True, blank=True)
    score_b2 = models.FloatField(null=True, blank=True)
    score_b3 = models.FloatField(null=True, blank=True)
    score_b4 = models.FloatField(null=True, blank=True)
    imported_from = models.JSONField(default=dict, blank=True)  # {field: "task_meta.yaml"|…} of the last sync
    # File-set versions: the current snapshot and the one the CLI last synced (browser-edit detection)
    snapshot = models.CharField(max_length=64)
    cli_snapshot = models.CharField(max_length=64, blank=True)
    last_validation = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    submitted_at = models.DateTimeField(null=True, blank=True)
    published_version = models.CharField(max_length=20, blank=True)

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "task_id"],
                condition=models.Q(status__in=["draft", "submitted", "changes_requested"]) & ~models.Q(task_id=""),
                name="one_open_proposal_per_owner_and_task",
            )
        ]

    def __str__(self) -> str:
        return f"{self.task_id or '(untitled)'} [{self.status}]"

    @property
    def is_editable(self) -> bool:
        return self.status in self.EDITABLE

    @property
    def scores(self) -> dict[str, float | None]:
        return {"b1": self.score_b1, "b2": self.score_b2, "b3": self.score_b3, "b4": self.score_b4}


class ProposalFile(models.Model):
    """One file of the working draft. `path` is the NFC, POSIX relative name, stored verbatim."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=255)
    blob = models.CharField(max_length=300)  # storage name; never served by URL
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()

    class Meta:
        ordering = ["path"]
        constraints = [models.UniqueConstraint(fields=["proposal", "path"], name="one_file_per_draft_path")]


class Revision(models.Model):
    """A frozen snapshot of a proposal, made by Submit. Never updated after creation."""

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    fields = models.JSONField()
    validation = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["proposal", "number"]
        constraints = [models.UniqueConstraint(fields=["proposal", "number"], name="unique_revision_number")]

    def __str__(self) -> str:
        return f"{self.proposal_id} r{self.number}"

    def save(self, *args: object, **kwargs: object) -> None:
        # The one guard that belongs in the model: a frozen revision is never rewritten.
        if not self._state.adding:
            raise RuntimeError("A frozen revision is immutable.")
        super().save(*args, **kwargs)  # type: ignore[arg-type]


class RevisionFile(models.Model):
    revision = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=255)
    blob = models.CharField(max_length=300)
    sha256 = models.CharField(max_length=64)
    size = models.BigIntegerField()

    class Meta:
        ordering = ["path"]
        constraints = [models.UniqueConstraint(fields=["revision", "path"], name="one_file_per_revision_path")]

    def save(self, *args: object, **kwargs: object) -> None:
        if not self._state.adding:
            raise RuntimeError("A frozen revision is immutable.")
        super().save(*args, **kwargs)  # type: ignore[arg-type]


class ReviewEvent(models.Model):
    """The history of a proposal: submissions, comments, decisions, publication."""

    class Kind(models.TextChoices):
        SUBMITTED = "submitted", "Submitted"
        COMMENT = "comment", "Comment"
        CHANGES_REQUESTED = "changes_requested", "Changes requested"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"
        PUBLISHED = "published", "Published"

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="events")
    revision = models.ForeignKey(Revision, null=True, blank=True, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    text = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]


class ProposalJob(models.Model):
    """Work on a proposal that runs the author's code, done by a Celery worker, not the request.

    A pre-submit validation (which freezes a revision when it passes) or a publish. The row is
    the status the proposal page shows, the claim (a conditional UPDATE from `queued`), and,
    for validations, what the daily quota counts.
    """

    class Kind(models.TextChoices):
        VALIDATE = "validate", "Validation"
        PUBLISH = "publish", "Publishing"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                                     related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED, db_index=True)
    snapshot = models.CharField(max_length=64, blank=True)  # the draft's file set being validated
    options = models.JSONField(default=dict, blank=True)  # publish: {"datasets": [...], "status": "final"}
    report = models.JSONField(default=dict, blank=True)
    problems = models.JSONField(default=list, blank=True)  # readable reasons when failed
    outcome = models.CharField(max_length=40, blank=True)  # revision number or published version
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "kind"], condition=models.Q(status__in=["queued", "running"]),
                                    name="one_active_job_per_proposal_and_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} of {self.proposal_id} [{self.status}]"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE


class RevisionDiff(models.Model):
    """What changed between two revisions of a proposal, computed once (by a worker for large files) and
    kept, so that the review page only reads it (proposals.diffs). `files` lists each changed path:
    {"path", "change": added|removed|changed, "diff": unified text} or, instead of "diff", "note":
    binary | too_large | too_long (the files are to be downloaded and compared elsewhere)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        READY = "ready"
        FAILED = "failed"

    old = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="+")
    new = models.ForeignKey(Revision, on_delete=models.CASCADE, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    files = models.JSONField(default=list)
    problem = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["old", "new"], name="one_diff_per_revision_pair")]
