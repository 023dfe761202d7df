"""The whole real catalog: public pages and APIs never carry private material; `task pull` end to end."""

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
import requests
from django.core.files.storage import default_storage

from scoring.generation import discover_task_dirs
from scoring.models import Instance, Task
from tests.support import OUR_CLI, read_archive_members, run_cli, screenshot

pytestmark = [pytest.mark.slow]
TASKS_ROOT = Path(__file__).resolve().parents[2] / "tasks"


def test_every_task_on_disk_enters_the_catalog_in_both_datasets(full_catalog, db):
    assert full_catalog.failures == []
    on_disk = len(discover_task_dirs(TASKS_ROOT))
    assert Task.objects.count() == on_disk
    assert Instance.objects.filter(dataset="seed42").count() == on_disk
    assert Instance.objects.filter(dataset="seed31415").count() == on_disk


def crawl(base: str) -> dict[str, bytes]:
    """Every public page and API response reachable from the catalog, plus instance archives."""
    seen: dict[str, bytes] = {}
    queue = ["/", "/tasks/", "/api/v1/datasets"]
    while queue:
        path = queue.pop()
        if path in seen:
            continue
        response = requests.get(base + path, timeout=30)
        assert response.status_code == 200, path
        seen[path] = response.content
        if "html" in response.headers.get("Content-Type", ""):
            links = re.findall(r'href="(/(?:tasks|datasets)/[^"#]*)"', response.text)
            queue.extend(link for link in links if link not in seen)
    for name in ("seed42", "seed31415"):
        listing = requests.get(f"{base}/api/v1/datasets/{name}/instances", timeout=30).json()
        seen[f"/api/v1/datasets/{name}/instances"] = json.dumps(listing).encode()
        for entry in listing["instances"]:
            seen[entry["download_url"].replace(base, "")] = requests.get(entry["download_url"], timeout=60).content
    return seen


def test_no_private_byte_is_reachable_from_public_pages_or_apis(full_catalog, portal_server, db):
    crawled = crawl(portal_server.url)
    reference_hashes: set[str] = set()
    for instance in Instance.objects.filter(dataset="seed42"):
        reference_hashes |= set(instance.reference_file_hashes.values())
    assert reference_hashes
    private_snippets = []
    for task_dir in discover_task_dirs(TASKS_ROOT):
        generator = (task_dir / "generate_gt.py").read_text()
        private_snippets += [line.strip() for line in generator.splitlines() if len(line.strip()) > 40][:5]
        specs = (task_dir / "reference_specs.md").read_text()
        private_snippets += [line.strip() for line in specs.splitlines() if len(line.strip()) > 60][:3]
    archives = {path: body for path, body in crawled.items() if path.endswith("/archive")}
    assert len(archives) == 2 * Instance.objects.filter(dataset="seed42").count()
    for path, body in archives.items():
        members = read_archive_members(body)
        names = list(members)
        if "/seed42/" in path:
            assert not any("/reference/" in name for name in names), path
            assert not any(name.endswith("instance_meta.json") for name in names), path
            member_hashes = {hashlib.sha256(data).hexdigest() for data in members.values()}
            assert not member_hashes & reference_hashes, path
        else:
            assert any("/reference/" in name for name in names), "seed31415 ships its references"
    for path, body in crawled.items():
        if path.endswith("/archive"):
            continue
        text = body.decode("utf-8", "replace")
        for snippet in private_snippets:
            assert snippet not in text, (path, snippet)
        for forbidden in ("generate_gt.py", "\"generation\"", "generation:", "reference_file_hashes", "params_used",
                          "source_dir", "source_archive", "private/tasks/", "_ref.npy"):
            assert forbidden not in text, (path, forbidden)


def test_task_pull_fetches_every_instance_and_resumes(full_catalog, portal_server, db, cli_home, tmp_path):
    out = tmp_path / "instances"
    pulled = run_cli([*OUR_CLI, "task", "pull", "--repo", "seed42", "--output-dir", str(out),
                      "--endpoint", portal_server.url], cli_home, timeout=300)
    assert pulled.returncode == 0, pulled.stderr
    expected = sorted(Instance.objects.filter(dataset="seed42").values_list("instance_id", flat=True))
    assert sorted(p.name for p in out.iterdir()) == expected
    for instance_dir in out.iterdir():
        assert {p.name for p in instance_dir.iterdir()} >= {
            "prompt_b1.md", "prompt_b2.md", "prompt_b3.md", "prompt_b4.md", "data", "task_info.json"}
        assert not (instance_dir / "reference").exists()
        info = json.loads((instance_dir / "task_info.json").read_text())
        assert info["task_id"].startswith("task_") and info["expected_outputs"]
    again = run_cli([*OUR_CLI, "task", "pull", "--repo", "seed42", "--output-dir", str(out),
                     "--endpoint", portal_server.url], cli_home)
    assert f"0 downloaded, 0 repaired, {len(expected)} already present" in again.stdout
    victim = next(p for p in (out / expected[0] / "data").rglob("*") if p.is_file())
    victim.write_bytes(b"corrupted")
    shutil.rmtree(out / expected[1])
    repaired = run_cli([*OUR_CLI, "task", "pull", "--repo", "seed42", "--output-dir", str(out),
                        "--endpoint", portal_server.url], cli_home)
    assert "1 downloaded, 1 repaired" in repaired.stdout, repaired.stdout
    assert victim.read_bytes() != b"corrupted"
    assert not any(p.name.startswith((".partial-", ".old-")) for p in out.iterdir())


def test_task_pull_of_the_public_dataset_carries_references(full_catalog, portal_server, db, cli_home, tmp_path):
    out = tmp_path / "public"
    result = run_cli([*OUR_CLI, "task", "pull", "--repo", "seed31415", "--output-dir", str(out),
                      "--endpoint", portal_server.url], cli_home, timeout=300)
    assert result.returncode == 0, result.stderr
    expected = sorted(Instance.objects.filter(dataset="seed31415").values_list("instance_id", flat=True))
    assert sorted(p.name for p in out.iterdir()) == expected
    for name in expected:
        assert any((out / name / "reference").iterdir()), name
        assert json.loads((out / name / "instance_meta.json").read_text())["params_used"]
    task_id = expected[0].split("__")[0]
    subset = run_cli([*OUR_CLI, "task", "pull", "--repo", "seed31415", "--tasks", task_id,
                      "--output-dir", str(tmp_path / "one"), "--endpoint", portal_server.url], cli_home)
    assert subset.returncode == 0, subset.stderr
    assert [p.name for p in (tmp_path / "one").iterdir()] == [f"{task_id}__seed31415"]


def test_task_pull_refuses_unknown_tasks_and_datasets(full_catalog, portal_server, db, cli_home, tmp_path):
    unknown = run_cli([*OUR_CLI, "task", "pull", "--repo", "seed42", "--tasks", "nope.missing",
                       "--output-dir", str(tmp_path / "x"), "--endpoint", portal_server.url], cli_home)
    assert unknown.returncode == 1
    assert "Unknown task ids: nope.missing." in unknown.stderr
    assert not (tmp_path / "x").exists()
    bad_repo = run_cli([*OUR_CLI, "task", "pull", "--repo", "seed7", "--output-dir", str(tmp_path / "y"),
                        "--endpoint", portal_server.url], cli_home)
    assert bad_repo.returncode == 2 and "seed7" in bad_repo.stderr


def test_a_corrupted_download_is_retried_then_reported(full_catalog, portal_server, db, cli_home, tmp_path):
    instance = Instance.objects.filter(dataset="seed42").first()
    with default_storage.open(instance.input_archive, "rb") as handle:
        original = handle.read()
    path = Path(default_storage.path(instance.input_archive))
    path.write_bytes(original[:-10] + b"0123456789")
    try:
        result = run_cli([*OUR_CLI, "task", "pull", "--repo", "seed42", "--tasks", instance.task_id,
                          "--output-dir", str(tmp_path / "c"), "--endpoint", portal_server.url], cli_home)
    finally:
        path.write_bytes(original)
    assert result.returncode == 1
    assert "failed 3 times: sha256 mismatch" in result.stderr
    assert list((tmp_path / "c").iterdir()) == []


def test_catalog_pages_in_chromium(full_catalog, portal_server, db, page):
    page.goto(portal_server.url + "/tasks/")
    domains = Task.objects.values("domain").distinct().count()
    assert f"in {domains} domains" in page.inner_text("main")
    screenshot(page, "catalog")
    task = Task.objects.order_by("id").first()
    page.click(f"text={task.id}")
    assert page.inner_text("h1") == task.name
    page.click("summary:has-text('B3')")
    assert page.is_visible("text=Outputs the agent must write")
    screenshot(page, "task-page")
    page.goto(portal_server.url + "/datasets/seed42/")
    assert "os" in page.inner_text("[data-testid=sandbox-modes]")


def test_the_official_client_pulls_every_instance_as_our_pull_does(full_catalog, portal_server, official_client,
                                                                    db, tmp_path):
    from tests.interop.test_official_client_pull import files_of, official_pull, our_pull

    for repo in ("seed42", "seed31415"):
        official_pull(official_client, portal_server.url, tmp_path / "home", tmp_path / f"official-{repo}",
                      "--repo", repo)
        our_pull(portal_server.url, tmp_path / "ours-home", tmp_path / f"ours-{repo}", "--repo", repo)
        theirs = files_of(tmp_path / f"official-{repo}")
        assert theirs == files_of(tmp_path / f"ours-{repo}"), repo
        assert len({name.split("/")[0] for name in theirs}) == len(discover_task_dirs(TASKS_ROOT))
        with_reference = any("reference" in name.split("/") for name in theirs)
        assert with_reference == (repo == "seed31415"), repo
