"""Hostile tar headers sent over real HTTP to the Portal under gunicorn: each is refused with a 4xx and
its reason, nothing is stored, and the Portal keeps answering `/healthz` while the upload is handled."""

import threading
from pathlib import Path

import pytest
import requests
from django.conf import settings

from portal.submissions.models import Submission
from tests.hostile_bundles import HOSTILE
from tests.support import issue_token

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def stored_archives() -> list[Path]:
    root = Path(settings.MEDIA_ROOT) / "submissions"
    return sorted(root.glob("*")) if root.exists() else []


def leftover_temp_files() -> list[Path]:
    return sorted((Path(settings.VAR_DIR) / "tmp").glob("bundle-*"))


# func_only: the module's catalog generation is set-up time, not the upload's.
@pytest.mark.timeout(60, func_only=True)
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_bundle_is_refused_over_http_while_healthz_stays_up(portal_server, submit_catalog, submitter,
                                                                      name):
    build, code = HOSTILE[name]
    body = build()
    token = issue_token(submitter.user)
    archives_before, temps_before = stored_archives(), leftover_temp_files()
    answer: dict[str, requests.Response] = {}

    def upload() -> None:
        answer["response"] = requests.post(
            f"{portal_server.api}/submissions/bundle", data=body, timeout=120,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/gzip",
                     "X-ASIBench-Filename": f"{name}.tar.gz"})

    uploader = threading.Thread(target=upload, daemon=True)
    uploader.start()
    health = []
    while True:  # at least one probe while the upload is in flight, then until it is answered
        health.append(requests.get(f"{portal_server.url}/healthz", timeout=10).status_code)
        uploader.join(timeout=0.05)
        if not uploader.is_alive():
            break
    response = answer["response"]
    assert response.status_code == 422, response.text
    assert response.json()["code"] == code, response.text
    assert response.json()["detail"].startswith(f"Bundle refused ({code}): ")
    assert health and set(health) == {200}
    assert requests.get(f"{portal_server.url}/healthz", timeout=10).status_code == 200
    assert Submission.objects.count() == 0
    assert stored_archives() == archives_before and leftover_temp_files() == temps_before
