# The owner is required, and in the configuration index and its one-current-row constraint.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0003_leaderboardentry_owner_data"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name="leaderboardentry",
            name="owner",
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                    to=settings.AUTH_USER_MODEL),
        ),
        migrations.RemoveIndex(model_name="leaderboardentry", name="board_configuration"),
        migrations.AddIndex(
            model_name="leaderboardentry",
            index=models.Index(fields=["owner", "dataset", "agent", "model", "effort", "sandbox"],
                               name="board_configuration"),
        ),
        migrations.AddConstraint(
            model_name="leaderboardentry",
            constraint=models.UniqueConstraint(condition=models.Q(("is_current", True)),
                                               fields=("owner", "dataset", "agent", "model", "effort", "sandbox"),
                                               name="one_current_row_per_configuration"),
        ),
    ]
