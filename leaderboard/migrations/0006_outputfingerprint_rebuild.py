"""Output fingerprints cover the declared outputs only, one row per declared file plus one for the set.
The old rows (a digest of every shipped file) are dropped and rebuilt from the stored results, so runs
scored before this migration are still found by later copies."""

from django.db import migrations


def rebuild(apps, schema_editor):
    # The current rule, from its one home (a rebuild of derived data, not a frozen schema step).
    from leaderboard.integrity_flags import declared_output_digests

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
        ("leaderboard", "0005_outputfingerprint_declared_files"),
        ("scoring", "0003_instancescore_entry_scoringrun_requested_by_and_more"),
        ("submissions", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(rebuild, migrations.RunPython.noop),
    ]
