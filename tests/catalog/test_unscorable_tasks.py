"""A task whose custom scorer imports what scoring here lacks is "unscorable here", and users see it:
its public page says it is not scored on this Portal and why, and the intake refuses results for it by
name (`task_unscorable`), keeping nothing. The fixture task is generated for real (bwrap) by catalog_load."""

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from contracts.bundle import build_bundle, write_archive
from portal.submissions.models import Submission
from scoring.models import Instance, Task
from scoring.task_loading import catalog_load
from tests.results_tree import write_result
from tests.scoring.catalog.catalog_support import add_variant, make_root
from tests.support import issue_token

UNSCORABLE = "demo.absent_solver"
REASON = ("custom_scorer.py imports asibench_absent_solver (neither in the task directory nor installed in the "
          "scoring environment)")
SCORER = '''\
from pathlib import Path

import asibench_absent_solver  # installed nowhere: this Portal cannot run the scorer
from ai4sci_bench.core.scorer import Scorer, register_scorer
from ai4sci_bench.core.types import ScoreDetail


@register_scorer("absent_solver_total")
class AbsentSolverTotal(Scorer):
    def score(self, pred_dir: Path, ref_dir: Path, config: dict) -> ScoreDetail:
        weight = float(config.get("weight", 1.0))
        fraction = asibench_absent_solver.grade(pred_dir / "total.json", ref_dir / "total_ref.json")
        return ScoreDetail("absent_solver_total", weight * fraction, weight, fraction > 0, {}, "")
'''


def with_absent_solver(target: Path) -> None:
    (target / "custom_scorer.py").write_text(SCORER)
    evaluation = target / "task_eval.yaml"
    text = evaluation.read_text()
    scoring = "  scoring:\n    - scorer: file_match\n      weight: 100\n"
    assert scoring in text
    evaluation.write_text(text.replace(scoring, "  scoring:\n    - scorer: absent_solver_total\n      weight: 100\n"))


@pytest.fixture
def catalog(db, tmp_path) -> None:
    root = make_root(tmp_path)
    add_variant(root, "absent_solver", with_absent_solver)
    report = catalog_load(tasks_root=root, dataset_names=["seed42"])
    assert not report.failures, report.lines
    assert Task.objects.get(id=UNSCORABLE).unscorable_reason == REASON
    assert Instance.objects.filter(task_id=UNSCORABLE, dataset="seed42").exists()  # generated all the same


def test_its_public_page_says_it_is_not_scored_here_and_why(catalog, client):
    page = client.get(f"/tasks/{UNSCORABLE}/").content.decode()
    assert 'data-testid="unscorable"' in page and "Not scored on this Portal." in page
    assert f"Its custom scorer cannot\n  run here: {REASON}. Results for this task are refused at upload" in page
    assert 'href="/guides/faq/#task_unscorable"' in page
    assert 'data-testid="unscorable"' not in client.get("/tasks/demo.tiny_sum/").content.decode()
    listing = client.get("/tasks/").content.decode()
    assert listing.count('data-testid="unscorable-badge"') == 1 and f'title="{REASON}"' in listing


def bundle(tmp_path: Path, task_ids: tuple[str, ...]) -> bytes:
    results = tmp_path / "results"
    results.mkdir()
    (results / "run_metadata.json").write_text(json.dumps({"framework_version": "0.2.0"}))
    for task_id in task_ids:
        write_result(results, f"{task_id}__seed42", "b1", {"total.json": b'{"total": 1}'})
    build_bundle(results, tmp_path / "bundle")
    return write_archive(tmp_path / "bundle", tmp_path / "bundle.tar.gz").read_bytes()


def upload(client: Client, user, body: bytes):  # noqa: ANN001, ANN201
    return client.generic("POST", "/api/v1/submissions/bundle", body, content_type="application/gzip",
                          HTTP_AUTHORIZATION=f"Bearer {issue_token(user)}")


def stored_archives() -> list[Path]:
    return sorted((Path(settings.MEDIA_ROOT) / "submissions").glob("*"))


def test_the_intake_refuses_results_for_it_by_name_and_keeps_nothing(catalog, submitter, client, tmp_path):
    before = stored_archives()
    response = upload(client, submitter.user, bundle(tmp_path, ("demo.tiny_sum", UNSCORABLE)))
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "task_unscorable"
    assert body["detail"] == (f"This Portal cannot score results for 1 task in this bundle: {UNSCORABLE} ({REASON}). "
                              "Leave it out of the run (asibench run --tasks …) and upload again; nothing was kept.")
    assert body["help_url"].endswith("/guides/faq/#task_unscorable")
    assert not Submission.objects.exists() and stored_archives() == before
    assert not list((Path(settings.VAR_DIR) / "tmp").glob("bundle-*"))


def test_results_for_the_tasks_it_can_score_are_taken(catalog, submitter, client, tmp_path):
    response = upload(client, submitter.user, bundle(tmp_path, ("demo.tiny_sum",)))
    assert response.status_code == 201, response.content
    assert Submission.objects.get().entries.get().task_id == "demo.tiny_sum"
