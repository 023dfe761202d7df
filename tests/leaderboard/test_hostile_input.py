"""Hostile values on the public side: CSV formulas, maintainers' identities, cache-filling queries."""

import csv
import io
from pathlib import Path

import pytest

from leaderboard import services
from tests.leaderboard.factories import RunSpec, scored_run

pytestmark = pytest.mark.django_db

FORMULAS = ["=HYPERLINK(\"http://evil.example\",\"x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)",
            "\t=1+1", "\r=1+1"]


def test_csv_export_neutralises_formula_cells(client, catalog, submitter, maintainer):
    for k, formula in enumerate(FORMULAS):
        run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"], agent=formula,
                                 model=f"model-{k}", effort=formula))
        services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name=formula)
    rows = list(csv.DictReader(io.StringIO(client.get("/leaderboard/export.csv").content.decode())))
    assert len(rows) == len(FORMULAS)
    for row in rows:
        for column in ("display_name", "agent", "effort"):
            assert row[column].startswith("'"), row[column]
            assert row[column][1:] in FORMULAS or row[column][1:] in {f.strip() for f in FORMULAS}
        float(row["b1"])  # numbers stay numbers (a negative figure is not text to neutralise)
    # The JSON API is data, not a spreadsheet: it keeps the values as they are.
    names = {r["display_name"] for r in client.get("/api/v1/leaderboard").json()["rows"]}
    assert names == {f.strip() for f in FORMULAS}  # publishing trims the name


def test_the_owner_sees_a_maintainers_role_not_their_email(client, catalog, submitter, maintainer):
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    services.run_review_reject(submission_id=run.id, actor=maintainer.user, reason="Outputs copied.")
    client.force_login(submitter.user)
    page = client.get(f"/submit/submissions/{run.id}").content.decode()
    assert 'data-testid="audit-log"' in page and "Outputs copied." in page
    assert '<td data-testid="audit-actor">maintainer</td>' in page
    assert maintainer.email not in page and maintainer.user.display_name not in page
    client.force_login(maintainer.user)
    assert maintainer.user.display_name in client.get(f"/submit/submissions/{run.id}").content.decode()


def _cache_entries(path: Path) -> int:
    return sum(1 for p in path.rglob("*.djcache"))


def test_query_parameters_are_validated_before_they_reach_the_cache(client, catalog, submitter, maintainer,
                                                                   settings, tmp_path):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                                   "LOCATION": str(tmp_path / "cache")}}
    run = scored_run(RunSpec(owner=submitter.user, instances=catalog["seed42"]))
    services.run_review_publish(submission_id=run.id, actor=maintainer.user, display_name="A")
    for url in ("/leaderboard/", "/leaderboard/?domain=math", "/api/v1/leaderboard",
                "/api/v1/leaderboard?domain=math", "/leaderboard/export.csv"):
        assert client.get(url).status_code == 200, url
    warmed = _cache_entries(tmp_path / "cache")
    assert warmed > 0

    ignored = ["/leaderboard/?page=abc", "/leaderboard/?page=999999", "/leaderboard/?page=1x", "/leaderboard/?page=-3",
               "/leaderboard/?sort=zzz&dir=sideways", "/leaderboard/?dir=%00", "/api/v1/leaderboard?sort=x&dir=y"]
    for url in ignored:
        assert client.get(url).status_code == 200, url
    refused = [f"/leaderboard/?domain=evil-{k}" for k in range(5)] + [
        "/api/v1/leaderboard?domain=evil", "/leaderboard/export.csv?domain=evil", "/leaderboard/?domain=" + "x" * 500]
    for url in refused:
        response = client.get(url)
        assert response.status_code == 400, url
        assert "Unknown domain" in response.content.decode()
    assert client.get("/api/v1/leaderboard?dataset=seed7").status_code == 404
    assert _cache_entries(tmp_path / "cache") == warmed
