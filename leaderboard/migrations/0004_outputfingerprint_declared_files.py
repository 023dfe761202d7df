"""Output fingerprints cover the declared outputs only, one row per declared file plus one for the set.
The old rows (a digest of every shipped file) are dropped and rebuilt from the stored results, so runs
scored before this migration are still found by later copies."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def rebuild(apps, schema_editor):
    # The current rule, from its one home (a rebuild of derived data, not a frozen schema step).
    from leaderboard.services import declared_output_digests

    Fingerprint = apps.get_model("leaderboard", "OutputFingerprint")
    Entry = apps.get_model("submissions", "SubmissionEntry")
    Task = apps.get_model("scoring", "Task")
    ScoringRun = apps.get_model("scoring", "ScoringRun")
    declared = {task_id: {str(o.get("name")) for o in outputs if isinstance(o, dict)}
                for task_id, outputs in Task.objects.values_list("id", "declared_outputs")}
    batch = []
    scored = ScoringRun.objects.filter(status="complete").values("submission_id")  # who had fingerprints
    rows = (Entry.objects.filter(submission_id__in=scored)
            .values_list("id", "submission_id", "submission__owner_id", "instance_id", "prompt_level", "task_id",
                         "outputs").iterator(chunk_size=2000))
    for entry_id, submission_id, owner_id, instance_id, level, task_id, outputs in rows:
        for path, digest in declared_output_digests(outputs, declared.get(task_id, set())).items():
            batch.append(Fingerprint(entry_id=entry_id, submission_id=submission_id, owner_id=owner_id,
                                     instance_id=instance_id, prompt_level=level, path=path, digest=digest))
        if len(batch) >= 5000:
            Fingerprint.objects.bulk_create(batch)
            batch = []
    Fingerprint.objects.bulk_create(batch)


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0003_board_configuration_with_owner"),
        ("scoring", "0003_instancescore_entry_scoringrun_requested_by_and_more"),
        ("submissions", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.DeleteModel(name="OutputFingerprint"),
        migrations.CreateModel(
            name="OutputFingerprint",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("instance_id", models.CharField(max_length=200)),
                ("prompt_level", models.CharField(max_length=2)),
                ("path", models.CharField(blank=True, max_length=300)),
                ("digest", models.CharField(max_length=64)),
                ("entry", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                            to="submissions.submissionentry")),
                ("owner", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                            to=settings.AUTH_USER_MODEL)),
                ("submission", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                                 to="submissions.submission")),
            ],
            options={
                "indexes": [models.Index(fields=["digest", "instance_id"], name="fingerprint_lookup")],
                "constraints": [models.UniqueConstraint(fields=("entry", "path"),
                                                        name="one_fingerprint_per_result_file")],
            },
        ),
        migrations.RunPython(rebuild, migrations.RunPython.noop),
    ]
