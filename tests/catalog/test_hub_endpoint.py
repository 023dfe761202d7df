"""The Hub-compatible dataset endpoint (/hf) through the Django stack: revision info, the paginated tree,
`resolve` with HEAD/GET/Range, old revisions, the seed42 reference rule and hostile requests."""

import hashlib
import re

import pytest
from django.core.files.storage import default_storage
from django.test import Client

from catalog.hub import selectors as hub
from scoring.models import Instance, Task
from tests.support import read_archive_members

pytestmark = [pytest.mark.slow]
SEED42 = "Apexintelligence-AI/ASI-Bench-seed42"
SEED31415 = "Apexintelligence-AI/ASI-Bench-seed31415"
TASK = "chemistry.counterpoise_cbs_energies"


def info(client: Client, repo: str, revision: str = "main") -> dict:
    response = client.get(f"/hf/api/datasets/{repo}/revision/{revision}")
    assert response.status_code == 200, response.content
    return response.json()


def tree(client: Client, repo: str, revision: str) -> list[dict]:
    """Every entry, following the Link header pages as huggingface_hub does."""
    entries, url = [], f"/hf/api/datasets/{repo}/tree/{revision}?recursive=true&expand=false"
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        entries += response.json()
        link = response.headers.get("Link")
        url = re.fullmatch(r'<http://testserver(.+)>; rel="next"', link).group(1) if link else None
    return entries


def resolve(client: Client, repo: str, path: str, revision: str = "main", method: str = "get", **headers: str):
    return getattr(client, method)(f"/hf/datasets/{repo}/resolve/{revision}/{path}", **headers)


def test_revision_info_gives_the_content_sha_and_the_served_files(submit_catalog, db, client):
    official = info(client, SEED42)
    assert re.fullmatch(r"[0-9a-f]{40}", official["sha"]) and official["id"] == SEED42
    # Every dataset is reachable by its own name too, at the same revision.
    assert info(client, "seed42")["sha"] == info(client, "asibench/seed42")["sha"] == official["sha"]
    files = [s["rfilename"] for s in official["siblings"]]
    instance_id = f"{TASK}__seed42"
    assert {f"tasks/{instance_id}/prompt_b{n}.md" for n in range(1, 5)} <= set(files)
    assert f"tasks/{instance_id}/task_info.json" in files
    assert any(f.startswith(f"tasks/{instance_id}/data/") for f in files)
    assert not any("reference" in f.split("/") or f.endswith("instance_meta.json") for f in files)
    public = [s["rfilename"] for s in info(client, SEED31415)["siblings"]]
    assert any(f.startswith(f"tasks/{TASK}__seed31415/reference/") for f in public)
    assert info(client, SEED31415)["sha"] != official["sha"]


def test_the_tree_is_paginated_and_lists_each_file_with_size_and_git_oid(submit_catalog, db, client, settings):
    sha = info(client, SEED42)["sha"]
    whole = tree(client, SEED42, sha)
    settings.HUB_TREE_PAGE_SIZE = 3
    assert tree(client, SEED42, sha) == whole
    files = [e for e in whole if e["type"] == "file"]
    assert [f["path"] for f in files] == sorted(s["rfilename"] for s in info(client, SEED42)["siblings"])
    assert {"tasks", f"tasks/{TASK}__seed42", f"tasks/{TASK}__seed42/data"} <= {
        e["path"] for e in whole if e["type"] == "directory"}
    body = resolve(client, SEED42, files[0]["path"], sha).getvalue()
    assert files[0]["size"] == len(body)
    assert files[0]["oid"] == hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()
    first_level = client.get(f"/hf/api/datasets/{SEED42}/tree/{sha}").json()
    assert first_level == [{"type": "directory", "path": "tasks", "oid": first_level[0]["oid"]}]


def test_resolve_answers_head_and_get_with_the_headers_hf_hub_download_checks(submit_catalog, db, client):
    sha = info(client, SEED42)["sha"]
    path = f"tasks/{TASK}__seed42/prompt_b1.md"
    head = resolve(client, SEED42, path, method="head")
    got = resolve(client, SEED42, path)
    body = got.getvalue()
    assert head.status_code == got.status_code == 200 and head.content == b""
    for response in (head, got):
        assert response["X-Repo-Commit"] == sha
        assert response["ETag"] == f'"{hashlib.sha256(body).hexdigest()}"'
        assert response["Content-Length"] == str(len(body))
    archive = Instance.objects.get(instance_id=f"{TASK}__seed42").input_archive
    with default_storage.open(archive, "rb") as handle:
        assert body == read_archive_members(handle.read())[f"{TASK}__seed42/prompt_b1.md"]
    partial = resolve(client, SEED42, path, HTTP_RANGE="bytes=10-")
    assert partial.status_code == 206 and partial.getvalue() == body[10:]
    assert partial["Content-Range"] == f"bytes 10-{len(body) - 1}/{len(body)}"
    assert resolve(client, SEED42, path, HTTP_RANGE="bytes=-7").getvalue() == body[-7:]


@pytest.mark.parametrize("value, status, expected", [
    ("bytes=0-99999999999999999999999", 206, slice(None)),  # huge end: clamped to the file
    ("bytes=-99999999999999999999", 206, slice(None)),  # suffix longer than the file: all of it
    ("bytes=99999999999999999999-", 416, None),
    ("bytes=-5-3", 416, None),
    ("bytes=9-3", 416, None),
    ("bytes=-0", 416, None),
    ("bytes=0-1,4-5", 416, None),
    ("pages=1-2", 416, None),
])
def test_hostile_ranges_get_a_clamped_answer_or_416(submit_catalog, db, client, value, status, expected):
    path = f"tasks/{TASK}__seed42/prompt_b1.md"
    body = resolve(client, SEED42, path).getvalue()
    response = resolve(client, SEED42, path, HTTP_RANGE=value)
    assert response.status_code == status, response.content
    if expected is not None:
        assert response.getvalue() == body[expected]
    else:
        assert response["Content-Range"] == f"bytes */{len(body)}"
        assert response["X-Error-Code"] == "RangeNotSatisfiable"


@pytest.mark.parametrize("path", [
    f"tasks/{TASK}__seed42/../{TASK}__seed31415/reference/values.json",
    f"tasks/{TASK}__seed42/%2e%2e/%2e%2e/%2e%2e/portal/settings.py",
    f"tasks/{TASK}__seed42/data/../../../../../../etc/passwd",
    "tasks/../../../../etc/passwd",
    "%2Fetc%2Fpasswd",
    f"tasks/{TASK}__seed42//prompt_b1.md",
    f"tasks/{TASK}__seed42/data\\..\\..\\task_info.json",
])
def test_path_traversal_in_resolve_finds_nothing(submit_catalog, db, client, path):
    for method in ("head", "get"):
        response = resolve(client, SEED42, path, method=method)
        assert response.status_code == 404, (path, response.content)
        assert response["X-Error-Code"] == "EntryNotFound"


def test_seed42_references_are_never_served_whatever_the_path(submit_catalog, db, client):
    public = Instance.objects.get(instance_id=f"{TASK}__seed31415")
    private = Instance.objects.get(instance_id=f"{TASK}__seed42")
    names = [s["rfilename"] for s in info(client, SEED31415)["siblings"]
             if s["rfilename"].split("/")[2] in ("reference", "instance_meta.json")]
    assert names and resolve(client, SEED31415, names[0]).status_code == 200
    for name in names:
        relative = name.split("/", 2)[2]
        for repo in (SEED42, "seed42"):
            for method in ("head", "get"):
                response = resolve(client, repo, f"tasks/{private.instance_id}/{relative}", method=method)
                assert response.status_code == 404, (name, response.content)
        cross = resolve(client, SEED42, f"tasks/{public.instance_id}/{relative}")  # another dataset's instance
        assert cross.status_code == 404
    # Nor as a folder listing.
    listing = client.get(f"/hf/api/datasets/{SEED42}/tree/main/tasks/{private.instance_id}/reference")
    assert listing.status_code == 404 and listing["X-Error-Code"] == "EntryNotFound"


def test_unknown_repos_and_revisions_are_clear_404s(submit_catalog, db, client):
    for url in ("/hf/api/datasets/Apexintelligence-AI/ASI-Bench-seed7/revision/main",
                "/hf/api/datasets/someone/seed42/revision/main",
                f"/hf/datasets/nope/resolve/main/tasks/{TASK}__seed42/prompt_b1.md"):
        response = client.get(url)
        assert response.status_code == 404 and response["X-Error-Code"] == "RepoNotFound", url
        assert "not found on this Portal" in response.json()["error"]
    for revision in ("v1.0", "0" * 40, "refs%2Fpr%2F1"):
        response = client.get(f"/hf/api/datasets/{SEED42}/revision/{revision}")
        assert response.status_code == 404, revision
        assert response.get("X-Error-Code") in ("RevisionNotFound", "EntryNotFound"), revision
    assert client.get("/hf/api/models/gpt2").status_code == 404


def test_an_old_revision_is_served_while_its_instances_exist(submit_catalog, db, client):
    both = info(client, SEED42)["sha"]
    other = Task.objects.exclude(id=TASK).get(instances__dataset="seed42")
    other.status = Task.Status.RETIRED
    other.save()
    only_one = info(client, SEED42)["sha"]
    assert only_one != both
    other.status = Task.Status.FINAL
    other.save()
    assert info(client, SEED42)["sha"] == both
    earlier = info(client, SEED42, only_one)  # a subset of what is served now: still complete
    assert earlier["sha"] == only_one
    assert {s["rfilename"].split("/")[1] for s in earlier["siblings"]} == {f"{TASK}__seed42"}
    head = resolve(client, SEED42, f"tasks/{TASK}__seed42/prompt_b1.md", only_one, method="head")
    assert head.status_code == 200 and head["X-Repo-Commit"] == only_one
    # Once one of its instances is no longer served as it was, the revision is gone, and says why.
    Task.objects.filter(id=TASK).update(status=Task.Status.RETIRED)
    gone = client.get(f"/hf/api/datasets/{SEED42}/revision/{both}")
    assert gone.status_code == 404 and gone["X-Error-Code"] == "RevisionNotFound"
    assert "no longer served" in gone.json()["error"] and TASK in gone.json()["error"]


def test_hub_downloads_share_the_download_rate_limit(submit_catalog, db, client):
    from django.core.cache import cache
    from rest_framework.settings import api_settings
    from rest_framework.throttling import SimpleRateThrottle

    cache.clear()
    original = SimpleRateThrottle.THROTTLE_RATES
    SimpleRateThrottle.THROTTLE_RATES = {**api_settings.DEFAULT_THROTTLE_RATES, "dataset_download": "3/min"}
    try:
        codes = [client.get(f"/hf/api/datasets/{SEED42}/revision/main").status_code for _ in range(2)]
        codes.append(client.get("/api/v1/datasets/seed42/instances").status_code)
        refused = resolve(client, SEED42, f"tasks/{TASK}__seed42/prompt_b1.md", method="head")
    finally:
        SimpleRateThrottle.THROTTLE_RATES = original
        cache.clear()
    assert codes == [200, 200, 200]
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert refused["X-Error-Code"] == "RateLimited"


def test_hf_token_of_the_user_is_ignored_not_refused(submit_catalog, db, client):
    response = client.get(f"/hf/api/datasets/{SEED42}/revision/main", headers={"Authorization": "Bearer hf_abc"})
    assert response.status_code == 200


def test_export_writes_what_the_endpoint_serves(submit_catalog, db, client, tmp_path):
    from django.core.management import call_command

    call_command("dataset_export", str(tmp_path / "out"), "--layout", "hf", "--dataset", "seed42")
    written = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file())
    served = [s["rfilename"] for s in info(client, SEED42)["siblings"]]
    assert written == sorted(served)
    for name in served:
        assert (tmp_path / "out" / name).read_bytes() == resolve(client, SEED42, name).getvalue()
    call_command("dataset_export", str(tmp_path / "all"), "--layout", "hf")
    for repo in (SEED42, SEED31415):
        exported = tmp_path / "all" / repo.rpartition("/")[2]
        names = sorted(p.relative_to(exported).as_posix() for p in exported.rglob("*") if p.is_file())
        assert names == sorted(s["rfilename"] for s in info(client, repo)["siblings"])
    assert hub.repo_name(Instance.objects.get(instance_id=f"{TASK}__seed42").dataset) == SEED42


def test_every_instance_carries_the_digest_of_what_the_agent_is_given(submit_catalog, db, client, tmp_path):
    from contracts.digests import instance_dir_input_digest
    from tests.support import extract_instances

    listed = client.get("/api/v1/datasets/seed42/instances").json()["instances"]
    pulled = extract_instances("seed42", tuple(e["task_id"] for e in listed), tmp_path)
    assert len(listed) == 2
    for entry in listed:
        directory = pulled / entry["instance_id"]
        assert entry["input_digest"] == instance_dir_input_digest(directory)
        # task_info.json is regenerated by the runner: not part of the inputs; data and prompts are.
        (directory / "task_info.json").write_text("{}")
        assert instance_dir_input_digest(directory) == entry["input_digest"]
        (directory / "prompt_b4.md").write_text("other prompt")
        assert instance_dir_input_digest(directory) != entry["input_digest"]
