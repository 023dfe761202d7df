"""Loading task directories into the catalog: generation in the sandbox, bad tasks reported by name."""

import shutil

import pytest
from django.core.files.storage import default_storage

from scoring.models import Dataset, Instance, Task
from scoring.task_loading import catalog_load
from tests.hostile_yaml import alias_bomb
from tests.scoring.catalog.catalog_support import add_variant, make_root, patch_generator
from tests.support import read_archive_members


def outcomes(report) -> dict[tuple[str, str], str]:
    return {(line.task, line.dataset): line.outcome for line in report.lines}


def test_it_loads_a_task_into_both_datasets_and_keeps_inputs_and_references_apart(db, tmp_path):
    report = catalog_load(tasks_root=make_root(tmp_path))
    assert outcomes(report) == {("demo.tiny_sum", "seed42"): "generated", ("demo.tiny_sum", "seed31415"): "generated"}
    task = Task.objects.get()
    assert task.status == "sample" and task.revision == 1
    assert "generation" not in task.public_eval and set(task.public_eval) <= {"task_id", "output", "evaluation"}
    official = Instance.objects.get(dataset="seed42")
    assert official.instance_id == "demo.tiny_sum__seed42"
    assert official.params["n"] >= 3 and "seed" in official.params
    with default_storage.open(official.input_archive, "rb") as handle:
        members = read_archive_members(handle.read())
    assert sorted(members) == sorted(
        [f"demo.tiny_sum__seed42/prompt_b{i}.md" for i in range(1, 5)]
        + ["demo.tiny_sum__seed42/data/numbers.json", "demo.tiny_sum__seed42/task_info.json"]
    )
    assert not any(b"REF-MARKER" in body for body in members.values())
    with default_storage.open(official.reference_archive, "rb") as handle:
        assert b"REF-MARKER-7f3a" in read_archive_members(handle.read())[
            "demo.tiny_sum__seed42/reference/total_ref.json"]
    public = Instance.objects.get(dataset="seed31415")
    with default_storage.open(public.input_archive, "rb") as handle:
        names = read_archive_members(handle.read())
    assert "demo.tiny_sum__seed31415/reference/total_ref.json" in names
    assert "demo.tiny_sum__seed31415/instance_meta.json" in names
    assert Dataset.objects.get(name="seed42").accepted_sandbox_modes == ["os", "linux_ns"]


def test_loading_is_idempotent_and_incremental(db, tmp_path):
    root = make_root(tmp_path)
    catalog_load(tasks_root=root)
    first = Instance.objects.get(dataset="seed42")
    again = catalog_load(tasks_root=root)
    assert set(outcomes(again).values()) == {"unchanged"}
    assert Instance.objects.get(dataset="seed42").generated_at == first.generated_at
    prompt = root / "demo" / "tiny_sum" / "prompt_b3.md"
    prompt.write_text(prompt.read_text() + "Mind the units.\n")
    changed = catalog_load(tasks_root=root)
    assert set(outcomes(changed).values()) == {"generated"}
    assert Task.objects.get().revision == 2
    assert Instance.objects.get(dataset="seed42").task_revision == 2


def test_archives_are_byte_identical_across_regeneration(db, tmp_path):
    root = make_root(tmp_path)
    catalog_load(tasks_root=root)
    sha = Instance.objects.get(dataset="seed42").input_sha256
    Instance.objects.all().delete()
    catalog_load(tasks_root=root)
    assert Instance.objects.get(dataset="seed42").input_sha256 == sha


@pytest.mark.parametrize(
    ("name", "edit", "reason"),
    [
        ("missing_prompt", lambda d: (d / "prompt_b2.md").unlink(), "prompts.b2: prompt_b2.md does not exist"),
        ("bad_id", lambda d: (d / "task_meta.yaml").write_text(
            (d / "task_meta.yaml").read_text().replace("id: demo.bad_id", "id: Demo.Bad-Id")), "bad task id"),
        ("crashes", lambda d: patch_generator(d, "    raise RuntimeError('boom in generator')\n"),
         "boom in generator"),
        ("sleeps", lambda d: patch_generator(d, "    import time; time.sleep(60)\n"), "timed out"),
        ("random", lambda d: patch_generator(d, "    import os; p['seed'] = int.from_bytes(os.urandom(4), 'big')\n"),
         "not deterministic"),
        ("networked", lambda d: patch_generator(
            d, "    import socket; socket.create_connection(('127.0.0.1', 6379), timeout=3)\n"), "generator failed"),
        # Before: read_task_dir kept the aliases and public_meta's JSON expanded them (9**5 strings here).
        ("alias_bomb", lambda d: (d / "task_meta.yaml").write_text(
            (d / "task_meta.yaml").read_text() + alias_bomb(5)), "anchors and aliases (&name / *name) are refused"),
    ],
)
def test_a_bad_task_is_reported_by_name_and_the_others_still_load(db, tmp_path, settings, name, edit, reason):
    root = make_root(tmp_path)
    add_variant(root, name, edit)
    if name == "sleeps":
        settings.CATALOG_GENERATION_TIMEOUT_SECONDS = 2  # the server's cap, not the task's YAML
    report = catalog_load(tasks_root=root)
    failed = [line for line in report.failures]
    assert failed, report.lines
    assert all(reason in line.detail for line in failed), [line.detail for line in failed]
    assert any(name in line.task for line in failed)
    assert set(Task.objects.values_list("id", flat=True)) == {"demo.tiny_sum"}
    assert Instance.objects.filter(task_id="demo.tiny_sum").count() == 2
    assert not Instance.objects.exclude(task_id="demo.tiny_sum").exists()


def test_a_task_removed_from_disk_is_retired(db, tmp_path):
    root = make_root(tmp_path)
    catalog_load(tasks_root=root)
    shutil.rmtree(root / "demo" / "tiny_sum")
    report = catalog_load(tasks_root=root)
    assert outcomes(report) == {("demo.tiny_sum", ""): "retired"}
    assert Task.objects.get().status == "retired"


def test_a_task_whose_references_ignore_the_seed_is_refused(db, tmp_path):
    root = make_root(tmp_path)
    add_variant(root, "fixed", lambda d: patch_generator(d, "    p['seed'], p['n'] = 1, 5\n"))
    report = catalog_load(tasks_root=root)
    failed = [line for line in report.failures if line.task == "demo.fixed"]
    assert {line.dataset for line in failed} == {"seed42", "seed31415"}, report.lines
    assert all("references are byte-identical" in line.detail for line in failed)
    assert not Instance.objects.filter(task_id="demo.fixed").exists()
    assert not Task.objects.filter(id="demo.fixed").exists()
    assert Instance.objects.filter(task_id="demo.tiny_sum").count() == 2
