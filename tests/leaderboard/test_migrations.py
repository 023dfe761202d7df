"""The board's data migrations on rows written under the old schema."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from leaderboard.models import LeaderboardEntry, OutputFingerprint
from scoring.models import ScoringRun
from tests.leaderboard.factories import RunSpec, scored_run

BEFORE = [("leaderboard", "0001_initial")]


def migrate(targets: list[tuple[str, str]] | None = None):
    executor = MigrationExecutor(connection)
    executor.migrate(targets or executor.loader.graph.leaf_nodes())
    return executor.loader.project_state(targets).apps if targets else None


@pytest.mark.django_db(transaction=True)
def test_rows_get_their_owner_a_displaced_competitor_is_current_again_and_fingerprints_are_rebuilt(
        catalog, submitter, other_user):
    runs = [scored_run(RunSpec(owner=who.user, instances=catalog["seed42"])) for who in (submitter, other_user)]
    old = migrate(BEFORE)
    try:
        OldEntry = old.get_model("leaderboard", "LeaderboardEntry")
        now = timezone.now()
        for k, (run, current) in enumerate(zip(runs, (False, True), strict=True)):
            # The old key had no owner: the other user's later run had retired the first user's row.
            OldEntry.objects.create(submission_id=run.id, scoring_run_id=ScoringRun.objects.get(submission=run).id,
                                    dataset_id="seed42", display_name=f"run {k}", agent=run.agent, model=run.model,
                                    effort=run.effort, sandbox=run.sandbox, is_current=current,
                                    published_at=now + timezone.timedelta(seconds=k))
        old.get_model("leaderboard", "OutputFingerprint").objects.create(
            entry_id=runs[0].entries.first().id, submission_id=runs[0].id, owner_id=submitter.user.id,
            instance_id="x", prompt_level="b1", digest="0" * 64)
    finally:
        migrate()
    rows = {e.display_name: (e.owner_id, e.is_current) for e in LeaderboardEntry.objects.all()}
    assert rows == {"run 0": (submitter.user.id, True), "run 1": (other_user.user.id, True)}
    # Each result's one declared output shipped (result.json), and the set of it.
    assert OutputFingerprint.objects.filter(submission=runs[0]).count() == 2 * runs[0].entries.count()
    assert set(OutputFingerprint.objects.values_list("path", flat=True)) == {"", "result.json"}
    assert not OutputFingerprint.objects.filter(instance_id="x").exists()


@pytest.mark.django_db(transaction=True)
def test_published_rows_get_their_coverage_and_confirmed_runs_their_ledger_rows(catalog, submitter, other_user):
    from portal.submissions.models import ScoredAttempt

    full = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    partial = scored_run(RunSpec(owner=other_user.user, instances=catalog["seed42"][:2]))
    old = migrate([("leaderboard", "0010_leaderboardentry_usage"), ("submissions", "0008_usage")])
    try:
        OldEntry = old.get_model("leaderboard", "LeaderboardEntry")
        for k, run in enumerate((full, partial)):
            scoring = ScoringRun.objects.get(submission=run)
            OldEntry.objects.create(submission_id=run.id, scoring_run_id=scoring.id, dataset_id="seed42",
                                    display_name=f"run {k}", owner_id=run.owner_id, agent=run.agent, model=run.model,
                                    effort=run.effort, sandbox=run.sandbox, tasks=scoring.aggregate["tasks"])
    finally:
        migrate()
    rows = {e.display_name: (e.complete, e.coverage["valid"], e.trust) for e in LeaderboardEntry.objects.all()}
    assert rows == {"run 0": (True, 20, "community"), "run 1": (False, 8, "community")}
    assert set(ScoredAttempt.objects.values_list("submission_id", flat=True)) == {full.id, partial.id}
