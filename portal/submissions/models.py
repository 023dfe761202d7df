import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from contracts.client_identity import client_label

# A run's configuration: one owner trying one agent setup on one dataset. The board keeps one current
# row per configuration and counts confirmed attempts per configuration. The labels are free text from
# the bundle, so the owner is what keeps one user's run from standing in for another's.
CONFIGURATION_FIELDS = ("owner", "dataset", "agent", "model", "effort", "sandbox")


class Submission(models.Model):
    """One uploaded result bundle (a run), from draft to scored."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        QUEUED = "queued"
        SCORING = "scoring"
        SCORED = "scored"
        FAILED = "failed"
        WITHDRAWN = "withdrawn"
        EXPIRED = "expired"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    dataset = models.ForeignKey("scoring.Dataset", on_delete=models.PROTECT, related_name="submissions")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DRAFT, db_index=True)
    status_reason = models.TextField(blank=True)
    archive = models.CharField(max_length=300)  # storage name; never served by URL
    archive_sha256 = models.CharField(max_length=64)
    archive_bytes = models.BigIntegerField()
    filename = models.CharField(max_length=255, blank=True)
    note = models.TextField(blank=True)
    framework_version = models.CharField(max_length=40, blank=True)
    # Which client made the results (contracts.client_identity): blank when they record none, as the
    # official client's do. `framework_version` cannot tell: both clients write "0.2.0".
    client_name = models.CharField(max_length=60, blank=True)
    client_version = models.CharField(max_length=40, blank=True)
    # contracts.bundle.results_digest: the same result files, however packed, are one run per owner.
    results_digest = models.CharField(max_length=64, blank=True)
    bundle_created_at = models.CharField(max_length=40, blank=True)
    agent = models.CharField(max_length=200, blank=True)
    model = models.CharField(max_length=200, blank=True)
    effort = models.CharField(max_length=60, blank=True)
    sandbox = models.CharField(max_length=40, blank=True)
    integrity_ok = models.BooleanField(default=True)
    incomplete_instances = models.JSONField(default=list)
    report = models.JSONField(default=dict)  # counts per level and task, coverage, warnings
    # Conformance to the benchmark's run configuration, computed at intake (portal.submissions.conformance):
    # [{"kind", "detail"}]. Shown to maintainers only.
    conformance = models.JSONField(default=list)
    # What the run cost and took (portal.submissions.usage.run_usage): per figure its total, mean per result,
    # coverage and source, priced at intake. Public once the run is published.
    usage = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)
    # When a scoring message was last sent for it (confirm, rescore, re-queue, the reaper's re-send).
    enqueued_at = models.DateTimeField(null=True, blank=True)
    scoring_started_at = models.DateTimeField(null=True, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    overall_score = models.FloatField(null=True, blank=True)  # of the current scoring, for lists
    # The misconduct scan of its results (portal.submissions.scanning): state, scanners' version, totals.
    scan = models.JSONField(default=dict)

    # A withdrawn or expired draft no longer holds its bytes: the same bundle may be uploaded again.
    ENDED_DRAFT_STATUSES = (Status.WITHDRAWN, Status.EXPIRED)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "archive_sha256"],
                condition=~models.Q(status__in=["withdrawn", "expired"]),
                name="one_live_submission_per_owner_and_archive",
            ),
            models.UniqueConstraint(
                fields=["owner", "results_digest"],
                condition=~models.Q(status__in=["withdrawn", "expired"]) & ~models.Q(results_digest=""),
                name="one_live_submission_per_owner_and_results",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.id} ({self.status})"

    @property
    def is_draft(self) -> bool:
        return self.status == self.Status.DRAFT

    @property
    def client_label(self) -> str:
        """`asibench-portal-cli 0.1.0`, or `asibench 0.2.0 (official client)` for results naming no client."""
        return client_label(self.client_name, self.client_version, self.framework_version)


class SubmissionEntry(models.Model):
    """One result of a run: an (instance, prompt level, attempt) with its declared outputs."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="entries")
    base_name = models.CharField(max_length=300)
    instance = models.ForeignKey("scoring.Instance", on_delete=models.PROTECT, related_name="entries")
    task_id = models.CharField(max_length=120)
    prompt_level = models.CharField(max_length=2)
    attempt = models.PositiveIntegerField(default=1)
    result_status = models.CharField(max_length=20, blank=True)
    outputs = models.JSONField(default=list)  # [{"path", "member", "sha256", "bytes"}]
    missing_outputs = models.JSONField(default=list)
    timed_out_with_outputs = models.BooleanField(default=False)
    provenance = models.JSONField(default=dict)
    # What the agent did, as its result recorded it (portal.submissions.evidence, capped and cleaned).
    # Only the run's owner and maintainers ever see it.
    evidence = models.JSONField(default=dict)
    # What this result cost and took (portal.submissions.usage.result_usage): each figure as the recorded calls
    # and as the result's own statement give it. Shown to the owner and maintainers.
    usage = models.JSONField(default=dict)
    # How the scanners read this result: the record (trajectory, JSONL, log), how far, where it was cut.
    scan = models.JSONField(default=dict)

    class Meta:
        ordering = ["base_name"]
        # Two spellings of one base name (`x__b1`, `x__b1__attempt1`) name one result: the second
        # constraint keeps it from counting twice whatever writes the rows.
        constraints = [models.UniqueConstraint(fields=["submission", "base_name"], name="unique_entry_per_run"),
                       models.UniqueConstraint(fields=["submission", "instance", "prompt_level", "attempt"],
                                               name="unique_result_per_run")]

    def __str__(self) -> str:
        return self.base_name


class ScanFinding(models.Model):
    """What a misconduct scanner found in one result (portal.submissions.scanners): the step, log line or
    output it cites, with a capped excerpt; the owner's answer, and the maintainers' decision on it (a
    moderation-log event). Excerpts and answers are private: the public sees counts per category only."""

    class Decision(models.TextChoices):
        UPHELD = "upheld", "upheld"
        DISMISSED = "dismissed", "dismissed"

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="findings")
    entry = models.ForeignKey(SubmissionEntry, on_delete=models.CASCADE, related_name="findings")
    scanner_version = models.CharField(max_length=20)
    detector = models.CharField(max_length=40)
    category = models.CharField(max_length=40)
    severity = models.CharField(max_length=10)
    cites = models.CharField(max_length=10)  # step | line | output | summary
    position = models.IntegerField(null=True)
    location = models.CharField(max_length=300, blank=True)
    turn = models.IntegerField(null=True)
    excerpt = models.TextField()
    detail = models.TextField()
    context = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    answer = models.TextField(blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    decision = models.CharField(max_length=10, choices=Decision.choices, blank=True)
    decision_reason = models.TextField(blank=True)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["entry__base_name", "id"]
        indexes = [models.Index(fields=["submission", "severity"], name="finding_severity")]

    def __str__(self) -> str:
        return f"{self.detector} ({self.severity}) in {self.entry_id}"


class ScanModelCall(models.Model):
    """One question the optional model-based scanner asked about one result (portal.submissions.scan_model):
    the request, the reply as stored after the judges' redaction, tokens and cost, or why nothing was asked.
    An identical request later reuses an answered call's reply (`reused_from`): scans replay."""

    class Status(models.TextChoices):
        ANSWERED = "answered"
        REUSED = "reused"  # an earlier identical call's reply
        REFUSED = "refused"  # a token budget was used up: not asked
        FAILED = "failed"  # the endpoint did not answer

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    entry = models.ForeignKey(SubmissionEntry, on_delete=models.CASCADE, related_name="+")
    model = models.CharField(max_length=200)
    resolved_model = models.CharField(max_length=200, blank=True)
    request = models.JSONField(default=dict)
    request_sha256 = models.CharField(max_length=64, db_index=True)
    status = models.CharField(max_length=10, choices=Status.choices)
    reply = models.TextField(blank=True)
    error = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(null=True, blank=True)
    reused_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)


class ScoredAttempt(models.Model):
    """The attempt ledger: one row per confirmed scoring of a run on a dataset whose references are private,
    kept whatever becomes of the run (each confirm is one question to the scoring oracle). Counted per owner
    and dataset, never per the labels a bundle carries (portal.submissions.selectors.scored_attempts)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    dataset = models.ForeignKey("scoring.Dataset", on_delete=models.CASCADE, related_name="+")
    submission = models.OneToOneField(Submission, null=True, on_delete=models.SET_NULL, related_name="ledger")
    tasks = models.JSONField(default=list)  # the task ids the run had results for
    confirmed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["owner", "dataset", "confirmed_at"], name="attempts_of_owner")]
