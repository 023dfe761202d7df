"""Each account has a daily share of the judges' tokens (issue 31), through the real path: the Portal under
gunicorn and Celery workers started as the README says, runs uploaded and confirmed over HTTP, the judges
asked at a local endpoint (tests/judge_endpoint.py).

One account's runs cannot spend another's judging: past its share its results wait, the run page says
why, and nothing is scored 0 for it (even with ASIBENCH_JUDGE_MAX_ROUNDS at 1, where an unanswered call
fails at once), while the other account's run is judged as usual. When the share allows again (here: the
operator raises it), the waiting results are judged and scored."""

from __future__ import annotations

import pytest

from portal.submissions.tasks import judge_waiting_resend_task
from scoring.judge_services import estimated_tokens
from scoring.models import InstanceScore, JudgeCall
from tests.judge_endpoint import JudgeEndpoint
from tests.judges.support import LEVELS, endpoint_env, restore_catalog, write_results
from tests.support import (
    bundle_of,
    http_login,
    http_upload_and_confirm,
    http_wait_status,
    start_celery_worker,
    stop_celery_worker,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SHARE_ENV = "ASIBENCH_JUDGE_USER_DAILY_TOKENS"


def run_archive(catalog, tmp_path, name: str, level: str):  # noqa: ANN001, ANN201
    results = write_results(tmp_path / name, catalog["reference"], catalog["params"], {level: LEVELS[level]})
    return bundle_of(results, tmp_path / "bundles" / f"{name}.tar.gz")


def scores_of(run_id: str) -> list[InstanceScore]:
    return list(InstanceScore.objects.filter(scoring_run__submission_id=run_id))


def test_one_account_past_its_daily_share_waits_with_the_reason_and_another_is_judged(
        judged_catalog, portal_server, submitter, other_user, tmp_path):
    restore_catalog(judged_catalog["rows"])

    def submit(persona, name: str, level: str) -> str:  # noqa: ANN001
        return http_upload_and_confirm(portal_server, persona, run_archive(judged_catalog, tmp_path, name, level))

    with JudgeEndpoint() as endpoint:
        base = {**endpoint_env(endpoint), "ASIBENCH_JUDGE_MAX_ROUNDS": "1"}
        # The owner's first run, before any share applies: what one such run reserves and spends.
        worker = start_celery_worker("share-1", extra_env=base)
        try:
            first = submit(submitter, "a1", "b1")
            assert http_wait_status(portal_server, submitter, first, ("scored", "failed"), 300)["status"] == "scored"
        finally:
            stop_celery_worker(worker)
        calls = list(JudgeCall.objects.filter(scoring_run__submission_id=first))
        reserved = sum(estimated_tokens(c) for c in calls)
        assert sum(c.input_tokens + c.output_tokens for c in calls) > 0

        # A share of exactly what one run reserves: the owner's second run goes past it, the other
        # account's first run (the same outputs) fits.
        worker = start_celery_worker("share-2", extra_env={**base, SHARE_ENV: str(reserved)})
        try:
            second = submit(submitter, "a2", "b2")
            waiting = http_wait_status(portal_server, submitter, second, ("scoring", "scored", "failed"), 300,
                                       predicate=lambda body: body["status"] != "scoring" or body["judges_waiting"])
            other = submit(other_user, "b1", "b1")
            other_done = http_wait_status(portal_server, other_user, other, ("scored", "failed"), 300)
            asked_before_raise = len(endpoint.requests)
        finally:
            stop_celery_worker(worker)

        assert waiting["status"] == "scoring", waiting
        budget = waiting["judges_waiting"]["budget"]
        assert budget["results"] == 1 and budget["resumes_at"]
        assert "this account's daily share of judge tokens" in budget["reason"]
        assert f"({reserved} tokens a day" in budget["reason"]
        assert scores_of(second) == [], "a result refused by the budget is not scored (0 or otherwise)"
        refused = JudgeCall.objects.filter(scoring_run__submission_id=second, status="pending")
        assert refused.exists() and all(c.attempts == 0 and c.waiting_for_budget for c in refused)
        assert not JudgeCall.objects.filter(scoring_run__submission_id=second, status="failed").exists()
        page = http_login(portal_server, submitter).get(f"{portal_server.url}/submit/submissions/{second}", timeout=60)
        text = " ".join(page.text.split())
        assert 'data-testid="judges-budget"' in text and "Waiting for judge budget:" in text
        assert "this account&#x27;s daily share of judge tokens" in text and "nothing is scored as 0 for it" in text

        assert other_done["status"] == "scored", other_done
        assert [s.outcome for s in scores_of(other)] == ["scored"] and scores_of(other)[0].percent > 0

        # The operator raises the share: the next sweep sends the waiting result again, and it is judged.
        worker = start_celery_worker("share-3", extra_env={**base, SHARE_ENV: str(reserved * 10)})
        try:
            judge_waiting_resend_task.delay()
            done = http_wait_status(portal_server, submitter, second, ("scored", "failed"), 300)
        finally:
            stop_celery_worker(worker)
    assert done["status"] == "scored", done
    assert len(endpoint.requests) > asked_before_raise
    assert [s.outcome for s in scores_of(second)] == ["scored"] and scores_of(second)[0].percent > 0
