"""The draft report compares each result's recorded input digest with the inputs this Portal generated."""

import json
import shutil
from pathlib import Path

import pytest
from django.test import Client

from portal.submissions import services
from scoring.models import Instance
from scoring.selectors import instance_input_digest
from tests.support import SUBMIT_TASKS, bundle_of

pytestmark = [pytest.mark.slow]


def intake(results: Path, persona, tmp_path: Path):
    (tmp_path / "bundles").mkdir(exist_ok=True)
    archive = bundle_of(results, tmp_path / "bundles" / f"{results.name}.tar.gz")
    with archive.open("rb") as stream:
        return services.submission_intake(user=persona.user, stream=stream, content_length=None,
                                          filename=archive.name).submission


def with_inputs(results: Path, dest: Path, inputs_for: dict[str, object]) -> Path:
    """A copy of a real run whose results record `inputs_for[instance_id]` (or nothing: key absent)."""
    shutil.copytree(results, dest)
    for path in dest.glob("*/*.json"):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and "result_schema_version" in data:
            data["provenance"].pop("inputs", None)
            if data["instance_id"] in inputs_for:
                data["provenance"]["inputs"] = inputs_for[data["instance_id"]]
            path.write_text(json.dumps(data))
    return dest


def test_our_run_matches_and_the_report_says_so(submit_catalog, submitter, db, run_results, tmp_path):
    draft = intake(run_results["reference"], submitter, tmp_path)
    assert {check["state"] for check in draft.report["inputs"].values()} == {"match"}
    assert set(draft.report["inputs"]) == {f"{task}__seed42" for task in SUBMIT_TASKS}
    for instance_id, check in draft.report["inputs"].items():
        ours = instance_input_digest(Instance.objects.get(instance_id=instance_id))
        assert ours[:12] in check["detail"]


def test_forged_unreadable_and_missing_digests(submit_catalog, submitter, db, run_results, tmp_path):
    first, second = (f"{task}__seed42" for task in SUBMIT_TASKS)
    results = with_inputs(run_results["reference"], tmp_path / "forged",
                          {first: {"scheme": "asibench-inputs-v1", "digest": "0" * 64}})
    draft = intake(results, submitter, tmp_path)
    assert draft.report["inputs"][first]["state"] == "mismatch"
    assert draft.report["inputs"][second] == {"state": "not_recorded",
                                              "detail": "the client recorded no input digest"}
    page = Client()
    page.force_login(submitter.user)
    html = page.get(f"/submit/submissions/{draft.id}").content.decode()
    assert 'data-testid="inputs-mismatch"' in html and "MISMATCH" in html and "not recorded" in html

    unreadable = with_inputs(run_results["reference"], tmp_path / "unreadable",
                             {first: {"digest": "../../etc/passwd"}, second: "not an object"})
    draft = intake(unreadable, submitter, tmp_path)
    # Something recorded that cannot be a digest is not silently "not recorded": it is a mismatch.
    for instance_id in (first, second):
        assert draft.report["inputs"][instance_id]["state"] == "mismatch"
        assert draft.entries.get(base_name=f"{instance_id}__b1").provenance["inputs"] == {"unreadable": True}


def test_an_instance_archive_gone_from_storage_is_unavailable_not_a_refused_upload(submit_catalog, submitter, db,
                                                                                     run_results, tmp_path):
    first = f"{SUBMIT_TASKS[0]}__seed42"
    Instance.objects.filter(instance_id=first).update(input_archive="instances/gone.tar.gz",
                                                           input_sha256="f" * 64)
    draft = intake(run_results["reference"], submitter, tmp_path)
    assert draft.report["inputs"][first]["state"] == "unavailable"
    assert {check["state"] for iid, check in draft.report["inputs"].items() if iid != first} == {"match"}
    page = Client()
    page.force_login(submitter.user)
    assert "cannot be checked here" in page.get(f"/submit/submissions/{draft.id}").content.decode()
