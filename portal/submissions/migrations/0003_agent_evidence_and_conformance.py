from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("submissions", "0002_submission_enqueued_at")]

    operations = [
        migrations.AddField(model_name="submission", name="conformance", field=models.JSONField(default=list)),
        migrations.AddField(model_name="submissionentry", name="evidence", field=models.JSONField(default=dict)),
    ]
