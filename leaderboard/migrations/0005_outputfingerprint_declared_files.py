# Output fingerprints cover the declared outputs only: one row per declared file plus one for the set
# (0006 rebuilds them from the stored results).

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0004_board_configuration_with_owner"),
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
    ]
