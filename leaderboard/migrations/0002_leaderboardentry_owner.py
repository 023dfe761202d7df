# The owner joins a board row's configuration (CONFIGURATION_FIELDS); 0003 fills it in. Data steps
# live in migrations of their own: PostgreSQL refuses the deferred index and constraint statements of a
# schema step in the transaction that just updated the rows ("pending trigger events").

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="leaderboardentry",
            name="owner",
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name="+",
                                    to=settings.AUTH_USER_MODEL),
        ),
    ]
