"""The private side's records: the task catalog, datasets and their instances.

Fields marked private (params, reference location and hash, generator hash, source dir)
never leave the scoring side: public selectors and serializers whitelist what they show.
"""

from django.db import models
from django.utils import timezone


class Task(models.Model):
    # What the public statuses mean, in the words the catalog and the publish form show.
    STATUS_MEANINGS = {
        "final": "calibrated, with frozen prompts: part of the benchmark proper",
        "sample": "a worked example of the task format; its instances are in the datasets and it is scored "
                  "here like any other task (the upstream benchmark's official runs leave samples out)",
    }

    class Status(models.TextChoices):
        SAMPLE = "sample"
        FINAL = "final"
        RETIRED = "retired"
        # Loaded for its scoring contract only: published without generator and prompts, never generated.
        DEFINITION_ONLY = "definition", "definition only: not generated"

    id = models.CharField(primary_key=True, max_length=120)  # "<domain>.<task_name>"
    domain = models.CharField(max_length=50, db_index=True)
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=20)
    status = models.CharField(max_length=10, choices=Status.choices)
    revision = models.PositiveIntegerField(default=1, help_text="Bumped whenever the task's files change.")
    public_meta = models.JSONField(default=dict)  # task_meta.yaml minus anything private
    public_eval = models.JSONField(default=dict)  # scoring contract: task_id, output, evaluation
    prompts = models.JSONField(default=dict)  # {"b1": "...", ...} prompt templates
    declared_outputs = models.JSONField(default=list)  # [{"name", "type"}]
    source_hash = models.CharField(max_length=64)  # sha256 over every file of the task directory
    source_dir = models.CharField(max_length=500)  # private: where the task was loaded from
    # private: the task's files in storage, what scoring runs (any worker host, see task_source_dir)
    source_archive = models.CharField(max_length=300, blank=True, default="")
    loaded_at = models.DateTimeField(default=timezone.now)
    # What the directory lacks that our proposals require (solution/, reference_specs.md, …).
    load_warnings = models.JSONField(default=list, blank=True)
    # Set when its custom scorer imports what scoring here cannot provide (the modules named).
    unscorable_reason = models.TextField(blank=True)
    # The public summary of `scores/<task_id>.json` beside the catalog root, read when the task
    # was loaded: the web host never reads the loading host's disk (contracts.difficulty.public_summary).
    difficulty = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["domain", "id"]

    def __str__(self) -> str:
        return self.id


class Dataset(models.Model):
    name = models.CharField(primary_key=True, max_length=40)  # "seed42", "seed31415"
    seed = models.PositiveIntegerField()
    official = models.BooleanField(default=False)
    references_public = models.BooleanField(default=False)
    accepted_sandbox_modes = models.JSONField(default=list)
    description = models.TextField(blank=True)
    # Bumped when a published task of the dataset gets a new revision (an erratum's fix, leaderboard.regrade).
    version = models.PositiveIntegerField(default=1)

    def __str__(self) -> str:
        return self.name


class Instance(models.Model):
    instance_id = models.CharField(primary_key=True, max_length=200)  # "<task_id>__seed<seed>"
    dataset = models.ForeignKey(Dataset, on_delete=models.CASCADE, related_name="instances")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="instances")
    task_revision = models.PositiveIntegerField()
    task_source_hash = models.CharField(max_length=64)
    params = models.JSONField(default=dict)  # private: params_used, for scorer templates
    input_archive = models.CharField(max_length=300)  # storage name of the public archive
    input_sha256 = models.CharField(max_length=64)
    input_bytes = models.BigIntegerField()
    reference_archive = models.CharField(max_length=300)  # private storage name
    reference_sha256 = models.CharField(max_length=64)
    reference_file_hashes = models.JSONField(default=dict)  # private: {relative path: sha256}
    generator_hash = models.CharField(max_length=64)
    generated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["instance_id"]
        constraints = [models.UniqueConstraint(fields=["dataset", "task"], name="one_instance_per_task_and_dataset")]

    def __str__(self) -> str:
        return self.instance_id


class ScoringRun(models.Model):
    """One scoring of a submission. A rescore adds a run and keeps the earlier ones."""

    class Status(models.TextChoices):
        RUNNING = "running"
        COMPLETE = "complete"
        FAILED = "failed"

    submission = models.ForeignKey("submissions.Submission", on_delete=models.CASCADE, related_name="scoring_runs")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.RUNNING)
    reason = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        "accounts.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    aggregate = models.JSONField(default=dict)  # per level, per task, per domain, overall
    # A rescore reuses the judge replies recorded by earlier scorings of the run unless asked to re-judge.
    rejudge = models.BooleanField(default=False)

    class Meta:
        ordering = ["submission", "-number"]
        constraints = [models.UniqueConstraint(fields=["submission", "number"], name="unique_scoring_number")]


class InstanceScore(models.Model):
    """The score of one result in one scoring run. Unique per run and result: never counted twice."""

    class Outcome(models.TextChoices):
        SCORED = "scored"  # includes zeros for missing outputs and failed gates
        ERROR = "error"  # scorer crash, timeout, sandbox limit: scored 0 with the reason

    scoring_run = models.ForeignKey(ScoringRun, on_delete=models.CASCADE, related_name="scores")
    entry = models.ForeignKey("submissions.SubmissionEntry", on_delete=models.CASCADE, related_name="scores")
    outcome = models.CharField(max_length=8, choices=Outcome.choices)
    final_score = models.FloatField()
    max_score = models.FloatField()
    percent = models.FloatField()
    hard_gates_passed = models.BooleanField(default=False)
    reason = models.TextField(blank=True)
    result = models.JSONField(default=dict)  # gate_results, score_results, messages (maintainers only)
    engine_version = models.CharField(max_length=40)
    task_revision = models.PositiveIntegerField()
    reference_sha256 = models.CharField(max_length=64)
    sandbox_backend = models.CharField(max_length=20)
    duration_seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["scoring_run", "entry"], name="score_once_per_run_and_entry")]


class JudgeCall(models.Model):
    """One judge call of one result in one scoring run: the request the sandbox handed back and the
    model's reply, or why there is none yet. Private: the request holds the rubric, the prediction
    and the reference; only maintainers ever see it."""

    class Status(models.TextChoices):
        PENDING = "pending"  # to be asked (again: after a failure, the sweep re-sends it at next_attempt_at)
        IN_FLIGHT = "in_flight"
        ANSWERED = "answered"
        FAILED = "failed"  # given up on, with the reason; the result fails with it

    scoring_run = models.ForeignKey(ScoringRun, on_delete=models.CASCADE, related_name="judge_calls")
    entry = models.ForeignKey("submissions.SubmissionEntry", on_delete=models.CASCADE, related_name="judge_calls")
    key = models.CharField(max_length=64)  # sha256 of the request (scoring.engine.judge_calls.request_key)
    index = models.PositiveIntegerField()  # the n-th identical request of the result (num_judges)
    kind = models.CharField(max_length=10)  # chat | agent
    scorer = models.CharField(max_length=120)
    model = models.CharField(max_length=200)  # as the task configured it
    resolved_model = models.CharField(max_length=200, blank=True)  # what the reply came from
    request = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)  # rounds of up to three client attempts each
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    # Refused by a token budget that refills (the day's, or the owner's daily share): it waits for the
    # budget without using up its rounds, and is never failed for it.
    waiting_for_budget = models.BooleanField(default=False)
    reply = models.JSONField(default=dict)  # the judge's reply, redacted (scoring.judging.redaction)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(null=True, blank=True)
    seconds = models.FloatField(null=True, blank=True)
    # A rescore that reuses a recorded reply points at the call that made it.
    reused_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["entry_id", "key", "index"]
        constraints = [models.UniqueConstraint(fields=["scoring_run", "entry", "key", "index"],
                                               name="one_judge_call_per_run_result_request")]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="judge_call_due")]


class JudgeTokenLedger(models.Model):
    """Judge tokens spent (and reserved for calls in flight) per scope: `run:<id>`, `day:<date>` and
    `user:<owner id>:<date>` (an account's daily share). The row `in-flight` holds no tokens: claims
    lock it so the cap on calls in flight is exact."""

    IN_FLIGHT_LOCK = "in-flight"

    scope = models.CharField(max_length=80, primary_key=True)
    tokens = models.BigIntegerField(default=0)


class TaskHealthCheck(models.Model):
    """One health check of one task revision on one dataset (scoring.health): whether the task's reference
    solution scores 100 at every level, its naive solution stays under the B3/B4 gate, and adversarial
    predictions score no more than the naive one. Rows are kept: they are the task's health history."""

    class Outcome(models.TextChoices):
        RUNNING = "running"
        HEALTHY = "healthy"
        FAILING = "failing"
        # Nothing to check it with here (no reference solution, a definition-only task): never healthy.
        NOT_CHECKABLE = "not_checkable", "not checkable here"
        # The check itself could not run (sandbox, storage, judge endpoint): says nothing about the task.
        ERROR = "error"

    class Trigger(models.TextChoices):
        SCHEDULE = "schedule"
        MAINTAINER = "maintainer"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="health_checks")
    task_revision = models.PositiveIntegerField()
    task_source_hash = models.CharField(max_length=64)
    dataset = models.ForeignKey(Dataset, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    engine_version = models.CharField(max_length=40)
    trigger = models.CharField(max_length=10, choices=Trigger.choices)
    requested_by = models.ForeignKey("accounts.User", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    outcome = models.CharField(max_length=14, choices=Outcome.choices, default=Outcome.RUNNING, db_index=True)
    reason = models.TextField(blank=True)  # why it fails, is not checkable or could not run (public)
    # [{"probe", "level", "percent", "expected", "passed", "reason"}]: maintainers only (private scores' reasons)
    probes = models.JSONField(default=list)
    judge = models.TextField(blank=True)  # which judge answered, for judged tasks
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [models.Index(fields=["task", "-started_at"], name="health_check_latest")]


class Erratum(models.Model):
    """A task found broken: opened by a failing health check, private until a maintainer confirms it,
    resolved by a newer published revision of the task (whose publication re-grades the board)."""

    class Status(models.TextChoices):
        OPEN = "open", "open (private until confirmed)"
        CONFIRMED = "confirmed"
        RESOLVED = "resolved"
        DISMISSED = "dismissed"

    ACTIVE = (Status.OPEN, Status.CONFIRMED)

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="errata")
    task_revision = models.PositiveIntegerField()  # the broken revision
    opened_by = models.ForeignKey(TaskHealthCheck, null=True, on_delete=models.SET_NULL, related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN, db_index=True)
    summary = models.TextField()  # public once confirmed: what is wrong, in the check's words
    confirmed_by = models.ForeignKey("accounts.User", null=True, blank=True, on_delete=models.SET_NULL,
                                     related_name="+")
    confirmed_at = models.DateTimeField(null=True, blank=True)
    resolved_revision = models.PositiveIntegerField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["task"], condition=models.Q(status__in=["open", "confirmed"]),
                                               name="one_active_erratum_per_task")]
