"""A task of ours in the official split layout with judge scorers, scored end to end: uploaded and confirmed,
scored by a real Celery worker (bubblewrap sandbox, judges asked outside it) against a local model endpoint,
and identical to the official 0.2.0 engine pointed at the same endpoint with ASIBENCH_JUDGE_API_BASE.
Then the review page shows each judge's score and reasoning, and the board marks the run."""

from __future__ import annotations

import hashlib
import json

import pytest

from leaderboard import services as board
from scoring.models import InstanceScore, JudgeCall
from tests.judge_endpoint import JudgeEndpoint
from tests.judges.support import (
    KEY_ENV,
    LAYOUTS,
    LEVELS,
    PUBLIC_NAME,
    SECRET,
    endpoint_env,
    restore_catalog,
    write_results,
)
from tests.support import cli_env, confirmed_run, run_cli, start_celery_worker, stop_celery_worker, wait_until_scored

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def official_scores(official_client, endpoint: JudgeEndpoint, catalog: dict, tmp_path) -> dict[str, dict]:  # noqa: ANN001
    results = write_results(tmp_path / "official-results", catalog["reference"], catalog["params"],
                            instance_id=PUBLIC_NAME)
    env = {**cli_env(tmp_path / "official-home"), **endpoint_env(endpoint), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    report = tmp_path / "official.json"
    done = run_cli([str(official_client), "score", "--repo", "seed31415", "--results-dir", str(results),
                    "--instances-dir", str(catalog["official_instances"]), "--tasks-dir", str(LAYOUTS),
                    "--output", str(report)], env, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return {r["prompt_level"]: r for r in json.loads(report.read_text())["results"]}


def test_a_judged_task_scores_through_a_worker_exactly_as_the_official_engine_scores_it(
        judged_catalog, official_client_with_scoring, submitter, maintainer, tmp_path, client):
    restore_catalog(judged_catalog["rows"])
    results = write_results(tmp_path / "results", judged_catalog["reference"], judged_catalog["params"])
    with JudgeEndpoint() as endpoint:
        worker = start_celery_worker("judges", extra_env=endpoint_env(endpoint))
        try:
            run = wait_until_scored(confirmed_run(submitter, results, tmp_path), timeout=400)
        finally:
            stop_celery_worker(worker)
        ours_requests = len(endpoint.requests)
        theirs = official_scores(official_client_with_scoring, endpoint, judged_catalog, tmp_path)

    assert run.status == "scored", run.status_reason
    scores = {s.entry.prompt_level: s for s in InstanceScore.objects.filter(scoring_run__submission=run)
              .select_related("entry")}
    assert set(scores) == set(LEVELS) == set(theirs)
    for level, score in scores.items():
        official = theirs[level]
        assert official["evaluation_status"] == "completed" and score.outcome == "scored", (level, score.reason)
        assert score.final_score == pytest.approx(official["final_score"], abs=1e-9), level
        ours_by_scorer = {d["scorer_name"]: d["score"] for d in score.result["score_results"]}
        theirs_by_scorer = {d["scorer_name"]: d["score"] for d in official["score_results"]}
        assert ours_by_scorer == pytest.approx(theirs_by_scorer, abs=1e-9), level
    finals = [scores[lv].final_score for lv in sorted(LEVELS)]
    assert len(set(finals)) == 4 and 0 < min(finals) and max(finals) < 100, finals
    assert ours_requests == 29  # 7 calls a level, and one 429 answered on the second attempt

    # Nothing secret entered the sandbox: the custom scorer saw neither the key nor its variable's name.
    peak = next(d for d in scores["b1"].result["score_results"] if d["scorer_name"] == "judged_spectrum_peak")
    seen = json.loads(peak["details"]["environment"])
    assert KEY_ENV not in seen and hashlib.sha256(SECRET.encode()).hexdigest() not in seen.values()
    assert not any(name.startswith("ASIBENCH_JUDGE") for name in seen)
    assert JudgeCall.objects.filter(scoring_run__submission=run, status="answered").count() == 28

    client.force_login(maintainer.user)
    review = client.get(f"/leaderboard/review/{run.id}/").content.decode()
    assert review.count('data-testid="judge-verdict"') == 8  # llm_judge and vlm_judge on four results
    assert "scripted 8" in review and "fenced 9" in review and "prose 6" in review
    assert "The judge saw truncated content: prediction report.md (2000 of" in review

    board.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="Judged run")
    page = client.get("/leaderboard/?dataset=seed42").content.decode()
    assert 'data-testid="judge-scored"' in page and "4 results include points scored by a model judge" in page
