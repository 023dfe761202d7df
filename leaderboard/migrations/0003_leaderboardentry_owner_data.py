"""The owner joins a board row's configuration: rows get their run's owner, and every configuration's
current row is recomputed, so a row that another owner's run with the same labels had retired is back."""

from django.db import migrations
from django.db.models import OuterRef, Subquery


def owners_and_current_rows(apps, schema_editor):
    Entry = apps.get_model("leaderboard", "LeaderboardEntry")
    Submission = apps.get_model("submissions", "Submission")
    Entry.objects.update(owner_id=Subquery(Submission.objects.filter(id=OuterRef("submission_id")).values("owner_id")[:1]))
    # The same rule as services._refresh_current: the newest published run of each configuration.
    key = ("dataset_id", "owner_id", "agent", "model", "effort", "sandbox")
    current, seen = [], set()
    for row in Entry.objects.order_by("-published_at", "-id").values("id", *key).iterator():
        configuration = tuple(row[k] for k in key)
        if configuration not in seen:
            seen.add(configuration)
            current.append(row["id"])
    Entry.objects.exclude(id__in=current).update(is_current=False)
    Entry.objects.filter(id__in=current).update(is_current=True)


class Migration(migrations.Migration):

    dependencies = [
        ("leaderboard", "0002_leaderboardentry_owner"),
        ("submissions", "0001_initial"),
    ]

    operations = [
        migrations.RunPython(owners_and_current_rows, migrations.RunPython.noop),
    ]
