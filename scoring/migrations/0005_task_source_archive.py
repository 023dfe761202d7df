from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("scoring", "0004_task_definition_only_warnings"),
    ]

    operations = [
        migrations.AddField(
            model_name="task",
            name="source_archive",
            field=models.CharField(blank=True, default="", max_length=300),
        ),
    ]
