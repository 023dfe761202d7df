from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("status", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="workerheartbeat",
            name="sandbox_mode",
            field=models.CharField(blank=True, max_length=100),
        ),
        migrations.AddField(
            model_name="workerheartbeat",
            name="sandbox_problem",
            field=models.TextField(blank=True),
        ),
    ]
