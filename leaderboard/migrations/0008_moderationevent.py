import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboard", "0007_integrityflag_inputs_mismatch"),
        ("scoring", "0001_initial"),
        ("submissions", "0001_initial"),
    ]

    operations = [
        migrations.CreateModel(
            name="ModerationEvent",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("kind", models.CharField(choices=[("publish", "published"), ("unpublish", "unpublished"),
                                                   ("reject", "rejected after publication"),
                                                   ("rescore", "rescored (published score changed)")],
                                          max_length=10)),
                ("display_name", models.CharField(max_length=120)),
                ("reason", models.TextField()),
                ("mean_before", models.FloatField(null=True)),
                ("mean_after", models.FloatField(null=True)),
                ("created_at", models.DateTimeField(db_index=True, default=django.utils.timezone.now)),
                ("dataset", models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name="+",
                                              to="scoring.dataset")),
                ("submission", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                                 to="submissions.submission")),
            ],
            options={"ordering": ["-created_at", "-id"]},
        ),
    ]
