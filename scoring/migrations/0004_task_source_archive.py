from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("scoring", "0003_instancescore_entry_scoringrun_requested_by_and_more"),
    ]

    operations = [
        migrations.AddField(
            model_name="task",
            name="source_archive",
            field=models.CharField(blank=True, default="", max_length=300),
        ),
    ]
