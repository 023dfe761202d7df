"""A hostile generator's leftovers never reach the host: links, hard links and special files in its
output are refused by name, and nothing of the host leaks into a stored archive or is written outside
the scratch dir. Every case runs the generator in the real bwrap sandbox through catalog_load."""

import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.storage import default_storage

from scoring.generation import TaskProblem
from scoring.models import Instance, Task
from scoring.task_loading import catalog_install, catalog_load
from tests.scoring.catalog.catalog_support import add_variant, make_root, patch_generator
from tests.support import read_archive_members

pytestmark = pytest.mark.django_db

HOST_SECRET = b"HOST-ONLY-SECRET-5b1e"


def root_only_file(tmp_path: Path) -> Path:
    secret = tmp_path / "host-secret" / "shadow.txt"
    secret.parent.mkdir()
    secret.write_bytes(HOST_SECRET)
    secret.chmod(0o600)
    return secret


def stored_archives() -> list[bytes]:
    bodies = []
    for instance in Instance.objects.all():
        for name in (instance.input_archive, instance.reference_archive):
            with default_storage.open(name, "rb") as handle:
                bodies.extend(read_archive_members(handle.read()).values())
    return bodies


def assert_refused(report, task: str, named: str) -> None:
    failed = [line for line in report.failures if line.task == task]
    assert failed, report.lines
    assert all(named in line.detail for line in failed), [line.detail for line in failed]
    assert not Instance.objects.filter(task_id=task).exists()
    assert not Task.objects.filter(id=task).exists()


def test_a_link_to_a_root_only_host_file_never_reaches_the_public_archive(db, tmp_path):
    secret = root_only_file(tmp_path)
    root = make_root(tmp_path)
    add_variant(root, "leaky", lambda d: patch_generator(
        d, f"    (output_dir / 'data').mkdir(parents=True, exist_ok=True)\n"
           f"    __import__('os').symlink({str(secret)!r}, output_dir / 'data' / 'leak.txt')\n"))
    report = catalog_load(tasks_root=root)
    assert_refused(report, "demo.leaky", "data/leak.txt")
    assert "link" in report.failures[0].detail
    assert not any(HOST_SECRET in body for body in stored_archives())
    assert Instance.objects.filter(task_id="demo.tiny_sum").count() == 2  # the honest task still loads


def test_a_dangling_prompt_link_does_not_make_the_host_write_outside_the_scratch_dir(db, tmp_path):
    outside = tmp_path / "outside" / "planted.md"
    outside.parent.mkdir()
    root = make_root(tmp_path)

    def edit(d: Path) -> None:
        patch_generator(d, "    import os\n"
                           "    output_dir.mkdir(parents=True, exist_ok=True)\n"
                           f"    os.symlink({str(outside)!r}, output_dir / 'prompt_b1.md')\n")
        # The fixture writes prompts itself; make it leave the planted link alone.
        path = d / "generate_gt.py"
        path.write_text(path.read_text().replace(
            '        (output_dir / f"prompt_{level}.md").write_text',
            '        if level != "b1": (output_dir / f"prompt_{level}.md").write_text'))

    add_variant(root, "dangling", edit)
    report = catalog_load(tasks_root=root)
    assert not outside.exists()
    assert_refused(report, "demo.dangling", "prompt_b1.md")


@pytest.mark.parametrize("target", ["../reference", "HOST_REFERENCES"])
def test_a_link_to_the_references_folder_publishes_no_reference(db, tmp_path, target):
    root = make_root(tmp_path)
    catalog_load(tasks_root=root)  # real references of another task now sit in private storage
    references = Path(settings.MEDIA_ROOT) / "private" / "references"
    assert any(references.rglob("*.tar.gz"))
    link_target = str(references) if target == "HOST_REFERENCES" else target
    add_variant(root, "reflink", lambda d: patch_generator(
        d, "    (output_dir / 'data').mkdir(parents=True, exist_ok=True)\n"
           f"    __import__('os').symlink({link_target!r}, output_dir / 'data' / 'refs')\n"))
    report = catalog_load(tasks_root=root)
    assert_refused(report, "demo.reflink", "data/refs")
    for instance in Instance.objects.all():
        with default_storage.open(instance.input_archive, "rb") as handle:
            names = read_archive_members(handle.read())
        assert not any("refs" in name or name.endswith(".tar.gz") for name in names), names


def test_hard_links_and_fifos_are_refused_by_name(db, tmp_path):
    root = make_root(tmp_path)
    add_variant(root, "hardlinked", lambda d: patch_generator(
        d, "    (output_dir / 'data').mkdir(parents=True, exist_ok=True)\n"
           "    (output_dir / 'data' / 'a.txt').write_text('x')\n"
           "    __import__('os').link(output_dir / 'data' / 'a.txt', output_dir / 'data' / 'b.txt')\n"))
    add_variant(root, "piped", lambda d: patch_generator(
        d, "    (output_dir / 'reference').mkdir(parents=True, exist_ok=True)\n"
           "    __import__('os').mkfifo(output_dir / 'reference' / 'pipe')\n"))
    report = catalog_load(tasks_root=root)
    assert_refused(report, "demo.hardlinked", "data/a.txt")
    assert "hard link" in [line for line in report.failures if line.task == "demo.hardlinked"][0].detail
    assert_refused(report, "demo.piped", "reference/pipe")
    assert "FIFO" in [line for line in report.failures if line.task == "demo.piped"][0].detail


def test_the_generator_time_limit_is_the_servers_cap_not_the_authors(db, tmp_path, settings):
    settings.CATALOG_GENERATION_TIMEOUT_SECONDS = 3
    root = make_root(tmp_path)
    target = add_variant(root, "patient", lambda d: patch_generator(d, "    import time; time.sleep(30)\n"))
    meta = target / "task_eval.yaml"
    meta.write_text(meta.read_text().replace("timeout_seconds: 20", "timeout_seconds: 100000"))
    report = catalog_load(tasks_root=root, dataset_names=["seed42"])
    failed = [line for line in report.failures if line.task == "demo.patient"]
    assert failed and "timed out after 3 s" in failed[0].detail, report.lines
    assert os.path.isdir(root)


def test_a_maintainers_catalog_load_has_its_own_cap_and_a_proposals_publish_keeps_the_smaller_one(
        db, tmp_path, settings):
    # Official generators may take minutes (minimum_snap_trajectory_conditioning: several per
    # instance); an author's proposal keeps the tighter cap.
    settings.GENERATION_TIMEOUT_SECONDS = 2
    settings.CATALOG_GENERATION_TIMEOUT_SECONDS = 60
    root = make_root(tmp_path)
    target = add_variant(root, "unhurried", lambda d: patch_generator(d, "    import time; time.sleep(4)\n"))
    report = catalog_load(tasks_root=root, dataset_names=["seed42"])
    assert not report.failures, report.lines
    assert Instance.objects.filter(task_id="demo.unhurried").exists()

    published = tmp_path / "published" / "demo"
    published.mkdir(parents=True)
    staging = published / ".unhurried.v2"
    shutil.copytree(target, staging)
    with pytest.raises(TaskProblem, match="timed out after 2 s"):
        catalog_install(directory=staging, link=published / "unhurried", dataset_names=["seed42"])
