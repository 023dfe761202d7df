"""Official task directories load as they are: the legacy one-file `task.yaml`, the split layout, and
formal tasks published without generator or prompts (definition only). Each unloadable directory is
named with its reason; ids shared by two directories follow the operator's choice.

The fixtures in `official_layouts/` are our own, written in the official layouts; generation runs in
the real bwrap sandbox through catalog_load.
"""

import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.core.management import CommandError, call_command

from scoring.models import Instance, Task
from scoring.task_loading import catalog_check, catalog_install, catalog_load
from tests.hostile_yaml import alias_bomb
from tests.scoring.catalog.catalog_support import FIXTURE
from tests.support import enrol_totp, read_archive_members

LAYOUTS = Path(__file__).parent / "official_layouts"
LEGACY = "physics/damped_fit"


def tree(tmp_path: Path, *names: str, at: str = "tasks") -> Path:
    root = tmp_path / at
    for name in names or (LEGACY, "chemistry/rate_table", "computer_science/sandboxed_replay"):
        shutil.copytree(LAYOUTS / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def command(name: str, *args: str) -> str:
    out = StringIO()
    call_command(name, *args, stdout=out)
    return out.getvalue()


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def test_catalog_check_gives_every_directory_its_verdict_and_names_the_refused(db, tmp_path):
    root = tree(tmp_path)
    (root / "physics" / "notes_only").mkdir()
    (root / "physics" / "notes_only" / "README.md").write_text("no definition here\n")
    with pytest.raises(CommandError, match="1 task directories would be refused"):
        call_command("catalog_check", str(root), stdout=(out := StringIO()))
    lines = out.getvalue().splitlines()
    verdicts = {line[17:].split()[0]: line for line in lines if line[:1] != " " and "directories:" not in line}
    assert verdicts["physics.damped_fit"].startswith("loadable ")
    assert verdicts["chemistry.rate_table"].startswith("definition only ")
    assert verdicts["computer_science.sandboxed_replay"].startswith("definition only ")
    assert "unscorable here: custom_scorer.py imports ai4sci_bench.runner.submission_sandbox" in \
        verdicts["computer_science.sandboxed_replay"]
    assert "numba" not in out.getvalue()  # imported under try/except ImportError: optional
    assert verdicts["physics/notes_only"].startswith("refused ")
    assert "neither task.yaml nor task_meta.yaml exists" in verdicts["physics/notes_only"]
    assert len(verdicts) == 4
    assert "4 directories: 3 loadable (2 definition only, 1 unscorable here), 1 refused" in out.getvalue()
    # What our proposals require and a maintainer's directory may lack: warnings, not refusals.
    assert "warning: no solution/" in out.getvalue() and "warning: no reference_specs.md" in out.getvalue()
    assert "notes for reviewers on correct answers and common mistakes; Portal check, not in the official " \
           "pre-submit)" in out.getvalue()
    assert "declares no INPUT_SPEC/OUTPUT_SPEC" in out.getvalue()
    assert not Task.objects.exists()


def test_catalog_load_generates_a_legacy_task_and_keeps_formal_ones_as_definitions(db, tmp_path):
    root = tree(tmp_path)
    report = command("catalog_load", "--tasks-dir", str(root))
    assert report.splitlines()[-1] == "4 ok (2 definition only), 0 failed"
    again = catalog_load(tasks_root=root)
    outcomes = {(line.task, line.dataset): line.outcome for line in again.lines}
    assert outcomes == {
        ("physics.damped_fit", "seed42"): "unchanged", ("physics.damped_fit", "seed31415"): "unchanged",
        ("chemistry.rate_table", ""): "definition", ("computer_science.sandboxed_replay", ""): "definition",
    }
    assert ("physics.damped_fit", "warning") in {(line.task, line.outcome) for line in again.warnings}
    legacy = Task.objects.get(id="physics.damped_fit")
    assert legacy.status == "sample" and not legacy.unscorable_reason
    assert any("no solution/" in w for w in legacy.load_warnings)
    assert set(legacy.public_eval) == {"task_id", "output", "evaluation"}
    assert "generation" not in legacy.public_meta and "evaluation" not in legacy.public_meta
    formal = Task.objects.get(id="chemistry.rate_table")
    assert formal.status == Task.Status.DEFINITION_ONLY and not formal.instances.exists()
    assert formal.public_eval["evaluation"]["scoring"][0]["scorer"] == "rate_table_score"
    assert any("cvxpy>=1.4" in w for w in formal.load_warnings)  # never generated, so only a warning
    replay = Task.objects.get(id="computer_science.sandboxed_replay")
    assert "ai4sci_bench.runner.submission_sandbox" in replay.unscorable_reason

    # The generator imported matplotlib in the sandbox, rendered its prompt from the parameters and
    # wrote a different timing on each of its two runs per dataset: all of that loads.
    instance = Instance.objects.get(task_id="physics.damped_fit", dataset="seed31415")
    with default_storage.open(instance.input_archive, "rb") as handle:
        members = read_archive_members(handle.read())
    top = instance.instance_id
    assert members[f"{top}/data/preview.png"].startswith(b"\x89PNG")
    prompt = members[f"{top}/prompt_b1.md"].decode()
    assert f"holds {instance.params['n_points']} noisy samples" in prompt and "{{" not in prompt
    meta = json.loads(members[f"{top}/instance_meta.json"])
    assert meta["generation_time_seconds"] > 0 and meta["params_used"] == instance.params
    # ...and a timing nested in a reference JSON (seed31415 publishes its references).
    diagnostics = json.loads(members[f"{top}/reference/fit_diagnostics.json"])
    assert diagnostics["solver"]["generation_seconds"] > 0


def test_a_task_eval_that_reuses_a_config_through_a_yaml_anchor_loads(db, tmp_path):
    # As the official euclidean_tsp_tour_optimization and max3sat_assignment_optimization do (&id001).
    name = "computer_science/shared_tour_config"
    assert "config: &id001" in (LAYOUTS / name / "task_eval.yaml").read_text()
    root = tree(tmp_path, name)
    [verdict] = catalog_check(roots=[root])
    assert not verdict.problem and verdict.source is not None and verdict.source.definition_only
    assert not catalog_load(tasks_root=root).failures
    evaluation = Task.objects.get(id="computer_science.shared_tour_config").public_eval["evaluation"]
    gate, score = evaluation["gates"][1]["config"], evaluation["scoring"][0]["config"]
    assert gate == score and gate["best_length_file"] == "best_length_ref.json"


def test_a_task_eval_whose_anchors_expand_like_a_bomb_is_refused_with_the_reason(db, tmp_path):
    root = tree(tmp_path, "computer_science/shared_tour_config")
    path = root / "computer_science" / "shared_tour_config" / "task_eval.yaml"
    path.write_text(path.read_text() + alias_bomb(5))
    [verdict] = catalog_check(roots=[root])
    assert verdict.problem.startswith("task_eval.yaml: cannot parse YAML: YAML anchors and aliases (&name / *name) "
                                      "are refused when they expand the document by more than 10000 nodes")


def test_catalog_load_names_every_directory_it_could_not_load_and_fails(db, tmp_path):
    root = tree(tmp_path, "chemistry/rate_table")
    broken = root / "chemistry" / "broken_yaml"
    broken.mkdir()
    (broken / "task.yaml").write_text("id: chemistry.broken_yaml\nname: [unclosed\n")
    (root / "chemistry" / "scorer_only").mkdir()
    (root / "chemistry" / "scorer_only" / "custom_scorer.py").write_text("")
    with pytest.raises(CommandError) as failed:
        call_command("catalog_load", "--tasks-dir", str(root), stdout=(out := StringIO()))
    assert "chemistry/broken_yaml: task.yaml is not valid YAML" in str(failed.value)
    assert "chemistry/scorer_only: neither task.yaml nor task_meta.yaml exists" in str(failed.value)
    assert "1 ok (1 definition only), 2 failed" in out.getvalue()
    assert list(Task.objects.values_list("id", flat=True)) == ["chemistry.rate_table"]


@pytest.mark.parametrize(("old", "new", "differing"), [
    ('"params_used": p,', '"params_used": p, "nonce": time.perf_counter_ns(),', "instance_meta.json"),
    ('"noise_sigma": 0.02,', '"noise_sigma": 0.02, "nonce": time.perf_counter_ns(),', "reference/fit_diagnostics.json"),
])
def test_a_generator_that_differs_beyond_its_timings_is_refused(db, tmp_path, old, new, differing):
    root = tree(tmp_path, LEGACY)
    edit(root / LEGACY / "generate_gt.py", old, new)
    report = catalog_load(tasks_root=root, dataset_names=["seed42"])
    assert [(line.outcome, line.detail) for line in report.failures] == [
        ("failed", f"generator is not deterministic: {differing} differ between runs")]
    assert not Task.objects.exists()


def test_references_that_differ_between_seeds_only_in_a_timing_are_refused(db, tmp_path):
    root = tree(tmp_path, LEGACY)
    edit(root / LEGACY / "generate_gt.py", "    p = {**DEFAULT_PARAMS, **params}\n",
         "    p = {**DEFAULT_PARAMS, **params}\n    p.update(n_points=40, damping=0.1, seed=0)\n")
    report = catalog_load(tasks_root=root)
    details = {line.detail for line in report.failures}
    assert details == {"the seed42 and seed31415 references are byte-identical, so the public seed31415 references "
                       "would reveal the private seed42 ones; make the generator depend on the seed"}
    assert not Instance.objects.exists()


@pytest.mark.parametrize(("requirement", "named"), [
    ("cvxpy>=1.4", "cvxpy>=1.4 (not installed in the generation and scoring environment)"),
    ("numpy>=99", "numpy>=99 (the generation and scoring environment has numpy 2."),
])
def test_a_generated_task_whose_runtime_packages_are_missing_is_refused_with_the_package(
        db, tmp_path, requirement, named):
    root = tree(tmp_path, LEGACY)
    edit(root / LEGACY / "task.yaml", '    - "pandas>=2.0"\n', f'    - "pandas>=2.0"\n    - "{requirement}"\n')
    [verdict] = catalog_check(roots=[root])
    assert verdict.problem.startswith("runtime cannot be satisfied here: ") and named in verdict.problem


def test_an_id_two_directories_share_is_refused_naming_both_unless_the_operator_chooses(db, tmp_path, settings):
    ours = tree(tmp_path, LEGACY, at="ours")
    theirs = tree(tmp_path, LEGACY, at="official")
    [first, second] = catalog_check(roots=[ours, theirs])
    assert not first.problem
    assert str(ours / LEGACY) in second.problem and str(theirs / LEGACY) in second.problem
    assert "ASIBENCH_CATALOG_ID_CLASH" in second.problem

    settings.CATALOG_ID_CLASH = "keep"
    [first, second] = catalog_check(roots=[ours, theirs])
    assert not first.kept_instead and f"kept {ours / LEGACY}" in second.kept_instead
    [first, second] = catalog_check(roots=[ours, theirs], on_id_clash="replace")
    assert f"replaced by {theirs / LEGACY}" in first.kept_instead and not second.kept_instead

    # Against the catalog: a task already loaded from another directory still on disk.
    Task.objects.create(id="physics.damped_fit", domain="physics", name="x", version="1", status="sample",
                        source_hash="0" * 64, source_dir=str(ours / LEGACY))
    settings.CATALOG_ID_CLASH = "refuse"
    [only] = catalog_check(roots=[theirs])
    assert f"also defined by {ours / LEGACY}" in only.problem
    with pytest.raises(CommandError, match="physics.damped_fit: id physics.damped_fit is also defined by"):
        call_command("catalog_load", "--tasks-dir", str(theirs), "--tasks", "physics.damped_fit",
                     stdout=StringIO())
    assert Task.objects.get().source_dir == str(ours / LEGACY)


def test_a_loaded_tasks_warnings_and_unscorable_reason_show_on_its_admin_page(db, tmp_path, client):
    from portal.accounts.models import User

    root = tree(tmp_path, "chemistry/rate_table", "computer_science/sandboxed_replay")
    assert not catalog_load(tasks_root=root).failures
    admin = User.objects.create_superuser(email="root@asibench.example", password="x-pass-12345")
    enrol_totp(admin)  # a superuser is a maintainer, who needs a second factor
    client.force_login(admin)
    page = client.get("/admin/scoring/task/chemistry.rate_table/change/")
    assert page.status_code == 200
    assert "runtime not available here (never generated, so not needed): cvxpy&gt;=1.4" in page.content.decode()
    listing = client.get("/admin/scoring/task/").content.decode()
    assert "ai4sci_bench.runner.submission_sandbox" in listing and "definition only: not generated" in listing


def test_a_proposal_is_published_without_solution_or_reference_specs_with_the_advice_kept(db, tmp_path):
    # The official pre-submit asks for neither; publishing keeps them as the task's warnings.
    published = tmp_path / "published" / "demo"
    staging = published / ".tiny_sum.v2"
    shutil.copytree(FIXTURE, staging, ignore=shutil.ignore_patterns("__pycache__", "solution", "reference_specs.md"))
    task = catalog_install(directory=staging, link=published / "tiny_sum", dataset_names=["seed42"])
    assert task.instances.count() == 1
    assert [w for w in task.load_warnings if w.startswith(("no solution/", "no reference_specs.md"))] == [
        "no solution/ (a reference solver, so the task can be checked end to end; Portal check, not in the "
        "official pre-submit)",
        "no reference_specs.md (notes for reviewers on correct answers and common mistakes; Portal check, not in "
        "the official pre-submit)",
    ]
