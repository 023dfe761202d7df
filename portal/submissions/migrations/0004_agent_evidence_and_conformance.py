from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("submissions", "0003_one_result_per_run")]

    operations = [
        migrations.AddField(model_name="submission", name="conformance", field=models.JSONField(default=list)),
        migrations.AddField(model_name="submissionentry", name="evidence", field=models.JSONField(default=dict)),
    ]
