"""The private side's records: the task catalog, datasets and their instances.

Fields marked private (params, reference location and hash, generator hash, source dir)
never leave the scoring side: public selectors and serializers whitelist what they show.
"""

from django.db import models
from django.utils import timezone


class Task(models.Model):
    class Status(models.TextChoices):
        SAMPLE = "sample"
        FINAL = "final"
        RETIRED = "retired"

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
    source_dir = models.CharField(max_length=500)  # private: where the scoring side reads it
    loaded_at = models.DateTimeField(default=timezone.now)

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
