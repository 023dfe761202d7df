"""Review decisions, their audit log, integrity flags and the published board rows.

`LeaderboardEntry` is a snapshot taken at publish time (aggregate, bootstrap intervals,
provenance summary), so that public pages read one table and never the per-result rows.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone

from portal.submissions.models import CONFIGURATION_FIELDS


class RunReview(models.Model):
    """The maintainers' decision on one run. Absent until the first action."""

    class State(models.TextChoices):
        PUBLISHED = "published"
        REJECTED = "rejected"
        UNPUBLISHED = "unpublished"
        RESCORING = "rescoring"

    submission = models.OneToOneField(
        "submissions.Submission", primary_key=True, on_delete=models.CASCADE, related_name="review"
    )
    state = models.CharField(max_length=12, choices=State.choices)
    display_name = models.CharField(max_length=120, blank=True)
    reason = models.TextField(blank=True)  # the rejection reason, shown to the owner
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(default=timezone.now)


class ReviewAction(models.Model):
    """The audit log: who did what to which run, when and why. Rows are never changed."""

    class Kind(models.TextChoices):
        PUBLISH = "publish"
        REJECT = "reject"
        RESCORE = "rescore"
        UNPUBLISH = "unpublish"
        FINDING = "finding"  # a decision on a scanner finding
        TRUST = "trust"  # a trust label set or changed
        SPOT = "spot"  # a spot validation drawn, its re-run attached, or decided

    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE, related_name="review_actions")
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    reason = models.TextField(blank=True)
    display_name = models.CharField(max_length=120, blank=True)
    scoring_number = models.PositiveIntegerField(null=True)  # the scoring the action applied to
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class IntegrityFlag(models.Model):
    """Something a reviewer should look at before publishing; computed when a run is scored."""

    class Kind(models.TextChoices):
        DUPLICATE_OUTPUTS = "duplicate_outputs", "outputs byte-identical to another user's run"
        STALE_TASK_REVISION = "stale_task_revision", "scored against an older task revision"
        SANDBOX_POLICY = "sandbox_policy", "provenance disagrees with the dataset's sandbox policy"
        TIMED_OUT_WITH_OUTPUTS = "timed_out_outputs", "marked as timed out but carries outputs"
        INPUTS_MISMATCH = "inputs_mismatch", "made from inputs other than the ones this Portal generated"
        # Gate consistency (leaderboard.gate_consistency).
        GATE_INCONSISTENT = "gate_inconsistent", "identical outputs pass the hard gates in one result, fail elsewhere"
        SAME_ACROSS_LEVELS = "same_across_levels", "outputs identical across levels where the task forbids it"
        SAME_ACROSS_TASKS = "same_across_tasks", "outputs byte-identical across different tasks"
        GATES_VS_SCORES = "gates_vs_scores", "every gate passes while every scored check fails (or the reverse)"

    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE, related_name="integrity_flags")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    base_name = models.CharField(max_length=300, blank=True)
    detail = models.TextField(blank=True)
    other_submission = models.ForeignKey(
        "submissions.Submission", null=True, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["kind", "base_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "kind", "base_name", "other_submission"],
                nulls_distinct=False,
                name="one_flag_per_run_kind_result_and_other",
            )
        ]


class OutputFingerprint(models.Model):
    """Digest of one result's declared outputs (what the scorer reads), so duplicate detection is an
    indexed lookup, not a scan: one row per declared file (`path`), and one for the set of them (`path`
    SET_PATH). Files the task does not declare are left out: they change no score, so they must not
    make a copied run look different."""

    SET_PATH = ""

    entry = models.ForeignKey("submissions.SubmissionEntry", on_delete=models.CASCADE, related_name="+")
    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE, related_name="+")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    instance_id = models.CharField(max_length=200)
    prompt_level = models.CharField(max_length=2)
    path = models.CharField(max_length=300, blank=True)
    digest = models.CharField(max_length=64)

    class Meta:
        indexes = [models.Index(fields=["digest", "instance_id"], name="fingerprint_lookup")]
        constraints = [models.UniqueConstraint(fields=["entry", "path"], name="one_fingerprint_per_result_file")]


class TrustLabel(models.TextChoices):
    """How far the maintainers vouch for a published run: the one definition the board, the entry page,
    both exports and the legend read (`TRUST_MEANINGS`)."""

    OFFICIAL = "official", "official"
    REPO_VERIFIED = "repo-verified", "repo-verified"
    COMMUNITY = "community", "community"


TRUST_MEANINGS: dict[str, str] = {
    TrustLabel.OFFICIAL: "fully reviewed, and its reproducibility verified by a passed spot validation",
    TrustLabel.REPO_VERIFIED: "run by the maintainers themselves during review",
    TrustLabel.COMMUNITY: "submitted by an outside user and reviewed; its reproducibility not verified",
}


class LeaderboardEntry(models.Model):
    """A published run as the public sees it. Only rows of this table are ever public."""

    submission = models.OneToOneField(
        "submissions.Submission", on_delete=models.CASCADE, related_name="leaderboard_entry"
    )
    scoring_run = models.ForeignKey("scoring.ScoringRun", on_delete=models.PROTECT, related_name="+")
    dataset = models.ForeignKey("scoring.Dataset", on_delete=models.PROTECT, related_name="+")
    display_name = models.CharField(max_length=120)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")  # never public
    agent = models.CharField(max_length=200)
    model = models.CharField(max_length=200)
    effort = models.CharField(max_length=60)
    sandbox = models.CharField(max_length=40)
    # The newest published run of its configuration (CONFIGURATION_FIELDS, the owner included): the board's row.
    is_current = models.BooleanField(default=True)
    b1 = models.FloatField(null=True)
    b2 = models.FloatField(null=True)
    b3 = models.FloatField(null=True)
    b4 = models.FloatField(null=True)
    mean = models.FloatField(null=True)
    intervals = models.JSONField(default=dict)  # {"b1": [lo, hi], ..., "mean": [lo, hi]}
    instances_scored = models.PositiveIntegerField(default=0)
    task_count = models.PositiveIntegerField(default=0)
    tasks = models.JSONField(default=dict)  # {task_id: {"mean": x, "levels": {b1..b4}}}
    domains = models.JSONField(default=dict)  # {domain: mean}
    provenance = models.JSONField(default=dict)  # public summary only: no paths, no owner
    # What the run cost and took, with sources and coverage (leaderboard.costs.public_usage); {} when unknown.
    usage = models.JSONField(default=dict)
    # The share of the official task set × B1–B4 scored validly (portal.submissions.outcomes.coverage); only
    # complete runs are ranked.
    coverage = models.JSONField(default=dict)
    complete = models.BooleanField(default=False)
    trust = models.CharField(max_length=16, choices=TrustLabel.choices, default=TrustLabel.COMMUNITY)
    scored_at = models.DateTimeField(null=True)
    published_at = models.DateTimeField(default=timezone.now)
    # A re-grade against a task's new revision (leaderboard.regrade), shown until a maintainer acknowledges it:
    # {"task", "from_revision", "to_revision", "state": pending|regraded|failed, "mean_before", "mean_after",
    # "rank_before", "scoring_number_before"}; {} when there is none to show. Public.
    regrade = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-mean", "display_name"]
        indexes = [
            models.Index(fields=["dataset", "is_current"], name="board_rows"),
            models.Index(fields=list(CONFIGURATION_FIELDS), name="board_configuration"),
        ]
        constraints = [
            models.UniqueConstraint(fields=list(CONFIGURATION_FIELDS), condition=models.Q(is_current=True),
                                    name="one_current_row_per_configuration"),
        ]

    def __str__(self) -> str:
        return self.display_name


class ModerationEvent(models.Model):
    """The public moderation log: every change a maintainer made to what the board shows, with a public
    reason. Rows are never changed. The maintainer is not named: the log is public."""

    class Kind(models.TextChoices):
        PUBLISH = "publish", "published"
        UNPUBLISH = "unpublish", "unpublished"
        REJECT = "reject", "rejected after publication"
        RESCORE = "rescore", "rescored (published score changed)"
        # A maintainer's decision on a scanner finding the owner answered: the category and the decision,
        # never the finding's excerpt or the owner's answer.
        FINDING = "finding", "decision on a scanner finding"
        TRUST = "trust", "trust label changed"
        # Task health (leaderboard.errata, leaderboard.regrade): about a task, not one run; `task_id` names it.
        ERRATUM = "erratum", "erratum confirmed for a task"
        TASK_REVISION = "task_rev", "fixed task revision published"
        REGRADE = "regrade", "re-graded against a new task revision"

    # Null for a task's events (an erratum, a new revision), which concern every run of the task.
    submission = models.ForeignKey("submissions.Submission", null=True, on_delete=models.CASCADE, related_name="+")
    dataset = models.ForeignKey("scoring.Dataset", null=True, on_delete=models.PROTECT, related_name="+")
    task_id = models.CharField(max_length=120, blank=True)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    display_name = models.CharField(max_length=120)  # the board name at the time
    reason = models.TextField()
    mean_before = models.FloatField(null=True)
    mean_after = models.FloatField(null=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]


class SpotValidation(models.Model):
    """A spot validation of a run (leaderboard.spot_validation): k sampled (instance, level) results to re-run
    with the same configuration, the seed that drew them (its SHA-256 shown at draw time, the seed itself once
    decided), the re-run the submitter (or a maintainer) attached, and per sampled result both scores."""

    class State(models.TextChoices):
        DRAWN = "drawn", "waiting for the re-run"
        PASSED = "passed", "passed"
        FAILED = "failed", "failed"

    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE, related_name="spot_validations")
    drawn_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    scoring_number = models.PositiveIntegerField()  # the scoring whose scores are the originals
    seed = models.CharField(max_length=64)  # secret until decided
    seed_sha256 = models.CharField(max_length=64)
    sample = models.JSONField(default=list)  # [{"base_name", "instance_id", "task_id", "prompt_level", "original"}]
    tolerance = models.FloatField()
    state = models.CharField(max_length=8, choices=State.choices, default=State.DRAWN)
    rerun = models.ForeignKey("submissions.Submission", null=True, on_delete=models.SET_NULL, related_name="+")
    # Attached by a maintainer who made the re-run themselves: the evidence of `repo-verified`.
    by_maintainers = models.BooleanField(default=False)
    comparison = models.JSONField(default=list)  # [{"base_name", "original", "rerun", "identical_outputs", "agree"}]
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True)

    class Meta:
        ordering = ["-created_at", "-id"]
