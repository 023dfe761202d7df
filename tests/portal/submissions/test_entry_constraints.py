"""What the database itself holds to, whatever code writes the rows."""

import pytest
from django.db import IntegrityError, transaction

from portal.submissions.models import SubmissionEntry
from tests.leaderboard.factories import RunSpec, make_catalog, scored_run

pytestmark = pytest.mark.django_db


def test_a_run_holds_one_row_per_instance_level_and_attempt_whatever_its_base_name(submitter):
    catalog = make_catalog({"math": 1})
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    entry = run.entries.get(prompt_level="b1")
    same = {"submission": run, "instance": entry.instance, "task_id": entry.task_id, "prompt_level": "b1"}
    with pytest.raises(IntegrityError, match="unique_result_per_run"), transaction.atomic():
        SubmissionEntry.objects.create(**same, base_name=f"{entry.base_name}__attempt1", attempt=1)
    SubmissionEntry.objects.create(**same, base_name=f"{entry.base_name}__attempt2", attempt=2)
    assert run.entries.filter(prompt_level="b1").count() == 2
