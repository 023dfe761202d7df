"""`/tasks/definitions.tar.gz`: every public task's definition (task_meta.yaml and the prompt templates)
as one deterministic download for `asibench run --tasks-dir`, built from what the catalog shows and
never from a task's private files. The official client's run on it: tests/interop/test_official_client_journey.py."""

import hashlib
import io
import shutil
import tarfile
from pathlib import Path

import pytest
import yaml
from django.test import Client

from catalog import selectors
from contracts.archives import extract_tree
from scoring.generation import PRIVATE_META_KEYS
from scoring.models import Task
from scoring.task_loading import catalog_load

pytestmark = pytest.mark.django_db

CATALOG_TESTS = Path(__file__).resolve().parents[1] / "scoring" / "catalog"
# A split task with generator, scoring contract, reference notes and a solver; a legacy one-file task whose
# task.yaml carries evaluation, generation and output shapes inline; a formal task without generator
# (definition only, never public).
SOURCES = {
    "demo/tiny_sum": CATALOG_TESTS / "tiny_task",
    "physics/damped_fit": CATALOG_TESTS / "official_layouts" / "physics" / "damped_fit",
    "chemistry/rate_table": CATALOG_TESTS / "official_layouts" / "chemistry" / "rate_table",
}
PUBLIC_TASKS = {"demo.tiny_sum": "demo/tiny_sum", "physics.damped_fit": "physics/damped_fit"}
# Every file of a task directory that is not public, by name, and the directories that hold private files.
PRIVATE_NAMES = {"task.yaml", "task_eval.yaml", "generate_gt.py", "custom_scorer.py", "reference_specs.md",
                 "task_submission.yaml", "instance_meta.json", "solve.py", "naive.py", "half_right.py"}
PRIVATE_DIRS = {"reference", "solution", "scores"}
URL = "/tasks/definitions.tar.gz"


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    root = tmp_path / "tasks"
    for where, source in SOURCES.items():
        shutil.copytree(source, root / where, ignore=shutil.ignore_patterns("__pycache__"))
    report = catalog_load(tasks_root=root)
    assert not report.failures, report.failures
    return root


@pytest.fixture
def fresh_cache(settings) -> None:
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache",
                                   "LOCATION": "task-definitions-tests"}}


def members(data: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def test_the_download_holds_each_public_definition_and_nothing_private(catalog, fresh_cache, tmp_path):
    response = Client().get(URL)
    assert response.status_code == 200 and response["Content-Type"] == "application/gzip"
    assert 'filename="definitions.tar.gz"' in response["Content-Disposition"]
    files = members(response.content)
    expected = {"tasks/README.txt"} | {f"tasks/{where}/{name}" for where in PUBLIC_TASKS.values()
                                       for name in selectors.PUBLIC_DEFINITION_FILES}
    assert set(files) == expected  # the definition-only chemistry.rate_table is not public: not there
    for name in files:
        parts = name.split("/")
        assert parts[-1] not in PRIVATE_NAMES and not PRIVATE_DIRS & set(parts), name
    for task_id, where in PUBLIC_TASKS.items():
        meta = yaml.safe_load(files[f"tasks/{where}/task_meta.yaml"])
        assert meta["id"] == task_id and meta["prompts"] == {f"b{i}": f"prompt_b{i}.md" for i in range(1, 5)}
        assert not PRIVATE_META_KEYS & set(meta), task_id
        assert all(set(entry) <= {"name", "type", "description"} for entry in meta["output"]["files"]), task_id
        assert meta == {**Task.objects.get(id=task_id).public_meta, "prompts": meta["prompts"]}
        for level in range(1, 5):  # the templates, as the task page shows them
            assert files[f"tasks/{where}/prompt_b{level}.md"] == (catalog / where / f"prompt_b{level}.md").read_bytes()
    metas = b"".join(content for name, content in files.items() if name.endswith("task_meta.yaml"))
    # What the private parts say: the legacy task.yaml's scorers, thresholds, generation block and output
    # shapes, and (anywhere in the archive) the split task's reference and reference notes.
    for secret in (b"scorer", b"severity", b"zero_score_threshold", b"relative_l2", b"infinite", b"generate_gt",
                   b"shape"):
        assert secret not in metas, secret
    for secret in (b"REF-MARKER", b"GENERATOR-SPECS-MARKER", b"rel_tol"):
        assert secret not in b"".join(files.values()), secret
    # It unpacks with our strict extractor into the tasks/ the official client reads by default.
    with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz") as tar:
        extract_tree(tar, tmp_path / "out")
    assert (tmp_path / "out" / "tasks" / "physics" / "damped_fit" / "task_meta.yaml").is_file()


def test_the_download_is_deterministic_cached_by_the_catalogs_state_and_conditional(
        catalog, fresh_cache, monkeypatch):
    client = Client()
    first = client.get(URL)
    assert first["ETag"] == f'"{hashlib.sha256(first.content).hexdigest()}"' == f'"{first["X-Content-SHA256"]}"'
    builds: list[int] = []
    real_pack = selectors.pack_files
    monkeypatch.setattr(selectors, "pack_files", lambda files: builds.append(1) or real_pack(files))
    again = client.get(URL)
    assert again.content == first.content and builds == []  # served from the cache
    unchanged = client.get(URL, HTTP_IF_NONE_MATCH=first["ETag"])
    assert unchanged.status_code == 304 and unchanged.content == b"" and unchanged["ETag"] == first["ETag"]

    # Built afresh (a cold cache), the same catalog gives the same bytes.
    from django.core.cache import cache

    cache.clear()
    assert client.get(URL).content == first.content and builds == [1]
    # A catalog change is a new archive under a new key: the retired task is gone from it.
    Task.objects.filter(id="demo.tiny_sum").update(status=Task.Status.RETIRED)
    changed = client.get(URL, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"] and builds == [1, 1]
    assert not any(name.startswith("tasks/demo/") for name in members(changed.content))


def test_an_empty_catalog_still_gives_the_tasks_directory_and_its_readme(fresh_cache):
    files = members(Client().get(URL).content)
    assert list(files) == ["tasks/README.txt"]
    assert b"no generator, no scoring contract" in files["tasks/README.txt"]


def test_the_catalog_pages_link_the_download(catalog):
    client = Client()
    for page in ("/tasks/", "/tasks/demo.tiny_sum/", "/datasets/seed42/"):
        html = client.get(page).content.decode()
        assert f'href="{URL}"' in html, page
