"""Loading the catalog: the two datasets, each task directory read and checked (`catalog_check`), its instances
generated twice in the sandbox, proven deterministic and stored (`catalog_load`); a published proposal's task put in
all or nothing (`catalog_install`)."""

import dataclasses
import logging
import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from contracts import difficulty
from scoring.engine import instance_id_for_seed, sample_params
from scoring.generation import (
    TaskProblem,
    TaskSource,
    build_archive,
    candidate_task_dirs,
    determinism_hashes,
    ensure_prompts,
    generator_run_in_sandbox,
    public_members,
    read_params_used,
    read_task_dir,
    tree_hashes,
    write_task_info,
)
from scoring.models import Dataset, Instance, Task
from scoring.sandbox import Limits, SandboxBackend, server_backend
from scoring.sandbox.limits import generation_limits
from scoring.sandbox.process import scratch_tree
from scoring.task_storage import scratch_root, storage_put, task_source_store

logger = logging.getLogger(__name__)

DEFAULT_DATASETS = {
    "seed42": {
        "seed": 42,
        "official": True,
        "references_public": False,
        "description": "The official dataset. References are private; runs are scored only by this Portal.",
    },
    "seed31415": {
        "seed": 31415,
        "official": False,
        "references_public": True,
        "description": "Public references for local, non-official scoring with `asibench score`.",
    },
}


def datasets_ensure() -> list[Dataset]:
    """Create the two fixed-seed datasets; keep their sandbox policy in step with settings."""
    out = []
    for name, fields in DEFAULT_DATASETS.items():
        modes = settings.DATASET_SANDBOX_MODES[name]
        dataset, _ = Dataset.objects.update_or_create(
            name=name, defaults={**fields, "accepted_sandbox_modes": modes}
        )
        out.append(dataset)
    return out


@dataclass
class LoadLine:
    task: str
    dataset: str
    outcome: str  # unchanged | generated | definition | kept | failed | retired (| warning, in LoadReport.warnings)
    detail: str = ""


@dataclass
class LoadReport:
    lines: list[LoadLine] = field(default_factory=list)
    warnings: list[LoadLine] = field(default_factory=list)  # what a loaded task lacks; never a failure

    def add(self, line: LoadLine, echo: Callable[[str], None] | None) -> None:
        (self.warnings if line.outcome == "warning" else self.lines).append(line)
        if echo:
            where = f" [{line.dataset}]" if line.dataset else ""
            echo(f"{line.outcome:>9}  {line.task}{where}  {line.detail}".rstrip())

    @property
    def failures(self) -> list[LoadLine]:
        return [line for line in self.lines if line.outcome == "failed"]


def difficulty_record_summary(task_dir: Path, task_id: str) -> dict[str, Any]:
    """The public summary of the latest evaluation in `scores/<task_id>.json` beside the catalog
    root `task_dir` belongs to; {} when there is none.

    That is where `asibench difficulty-check` run from a repository root keeps it
    (`tasks/<domain>/<name>/` ↔ `scores/<task_id>.json`). It lives outside the task directory
    on purpose: re-running the check must not change the task's files and so its revision.
    """
    parents = Path(task_dir).parents
    if len(parents) < 3:  # not <root>/<domain>/<name>: no scores/ beside a catalog root
        return {}
    record = difficulty.read_record(difficulty.record_path(parents[2] / "scores", task_id))
    if record is None or str(record.get("task_id")) != task_id:
        return {}
    summary = difficulty.public_summary(record)
    if summary is None:
        return {}
    return {**summary, "source": "asibench difficulty-check", "task_version": str(record.get("task_version") or "")}


def _task_upsert(source: TaskSource, files: Path | None = None) -> Task:
    archive = task_source_store(files or source.directory, task_id=source.task_id, source_hash=source.source_hash)
    existing = Task.objects.filter(id=source.task_id).first()
    revision = 1 if existing is None else existing.revision + (existing.source_hash != source.source_hash)
    task, _ = Task.objects.update_or_create(
        id=source.task_id,
        defaults={
            "domain": source.domain,
            "name": source.name,
            "version": source.version,
            "status": Task.Status.DEFINITION_ONLY if source.definition_only else source.status,
            "revision": revision,
            "public_meta": source.public_meta,
            "public_eval": source.public_eval,
            "prompts": source.prompts,
            "declared_outputs": source.declared_outputs,
            "source_hash": source.source_hash,
            "source_dir": str(source.directory),
            "source_archive": archive,
            "loaded_at": timezone.now(),
            "load_warnings": list(source.warnings),
            "unscorable_reason": source.unscorable,
            "difficulty": difficulty_record_summary(source.directory, source.task_id),
        },
    )
    return task


@dataclass(frozen=True)
class BuiltInstance:
    """One generated instance, archived in a local scratch dir, not yet stored."""

    dataset: Dataset
    instance_id: str
    params: dict
    public_archive: Path
    public_sha256: str
    public_bytes: int
    reference_archive: Path
    reference_sha256: str
    reference_hashes: dict[str, str]
    # The reference files under the determinism rule (volatile timings left out): what tells seeds apart.
    reference_stable_hashes: dict[str, str]


def instance_build(
    *, source: TaskSource, dataset: Dataset, scratch: Path, backend: SandboxBackend | None = None,
    limits: Limits | None = None,
) -> BuiltInstance:
    """Generate one instance twice in the sandbox, prove it deterministic, archive it in `scratch`.

    Raises TaskProblem when the generator fails, times out, touches the network, leaves
    links or special files, or writes different bytes on the second run.
    """
    backend = backend or server_backend(settings.SCORING_SANDBOX)
    params = sample_params(source.task, dataset.seed)
    instance_id = instance_id_for_seed(source.task_id, dataset.seed)
    limits = limits or generation_limits(settings)
    first = generator_run_in_sandbox(source, params, scratch / "run1", backend, limits)
    second = generator_run_in_sandbox(source, params, scratch / "run2", backend, limits)
    first_hashes, second_hashes = determinism_hashes(first), determinism_hashes(second)
    if first_hashes != second_hashes:
        differing = sorted(k for k in first_hashes.keys() | second_hashes.keys()
                           if first_hashes.get(k) != second_hashes.get(k))
        raise TaskProblem(f"generator is not deterministic: {', '.join(differing[:5])} differ between runs")
    # `first` is a host-made copy of the generator's regular files (see generator_run_in_sandbox).
    ensure_prompts(first, source)
    write_task_info(first, source)
    public_sha, public_bytes = build_archive(
        first, public_members(first, dataset.references_public), instance_id, scratch / "public.tar.gz"
    )
    reference_sha, _ = build_archive(first, ["reference"], instance_id, scratch / "reference.tar.gz")
    return BuiltInstance(
        dataset=dataset, instance_id=instance_id, params=read_params_used(first, params),
        public_archive=scratch / "public.tar.gz", public_sha256=public_sha, public_bytes=public_bytes,
        reference_archive=scratch / "reference.tar.gz", reference_sha256=reference_sha,
        reference_hashes=tree_hashes(first / "reference"),
        reference_stable_hashes={k: v for k, v in first_hashes.items() if k.startswith("reference/")},
    )


def instance_store(*, built: BuiltInstance, source: TaskSource, task: Task) -> Instance:
    """Store the archives under content-addressed names and point the instance row at them.

    Call inside the caller's transaction: until it commits, the previous archives stay where
    the previous row points (they are deleted only after the commit).
    """
    dataset, instance_id = built.dataset, built.instance_id
    old = Instance.objects.filter(instance_id=instance_id).values_list("input_archive", "reference_archive").first()
    input_name = storage_put(built.public_archive,
                        f"datasets/{dataset.name}/{instance_id}-{built.public_sha256[:16]}.tar.gz",
                        built.public_sha256)
    reference_name = storage_put(built.reference_archive,
                            f"private/references/{dataset.name}/{instance_id}-{built.reference_sha256[:16]}.tar.gz",
                            built.reference_sha256)
    instance, _ = Instance.objects.update_or_create(
        instance_id=instance_id,
        defaults={
            "dataset": dataset,
            "task": task,
            "task_revision": task.revision,
            "task_source_hash": source.source_hash,
            "params": built.params,
            "input_archive": input_name,
            "input_sha256": built.public_sha256,
            "input_bytes": built.public_bytes,
            "reference_archive": reference_name,
            "reference_sha256": built.reference_sha256,
            "reference_file_hashes": built.reference_hashes,
            "generator_hash": source.generator_hash,
            "generated_at": timezone.now(),
        },
    )
    stale = {name for name in old or () if name not in {input_name, reference_name}}
    if stale:
        def delete_stale() -> None:
            for name in stale:
                default_storage.delete(name)

        transaction.on_commit(delete_stale)
    return instance


def seeds_reveal_each_other(built: list[BuiltInstance]) -> str | None:
    """Why these datasets' references must not be published together, or None.

    A task whose references do not depend on the seed would publish seed42's private
    references as seed31415's public ones.
    """
    public = [b for b in built if b.dataset.references_public]
    private = [b for b in built if not b.dataset.references_public]
    for open_one in public:
        for closed in private:
            if open_one.reference_stable_hashes == closed.reference_stable_hashes:
                return (f"the {closed.dataset.name} and {open_one.dataset.name} references are byte-identical, "
                        f"so the public {open_one.dataset.name} references would reveal the private "
                        f"{closed.dataset.name} ones; make the generator depend on the seed")
    return None


def catalog_roots() -> list[Path]:
    """Where task directories live: the repository's tasks/ and tasks published from proposals."""
    return [Path(settings.TASKS_DIR), Path(settings.PUBLISHED_TASKS_DIR)]


@dataclass(frozen=True)
class Verdict:
    """What one task directory would do in the catalog, before anything is generated."""

    directory: Path
    label: str  # "<domain>/<dir>" or the task id once read
    source: TaskSource | None
    problem: str = ""  # why it is refused ("" when it loads)
    kept_instead: str = ""  # set when an id clash leaves this directory out by the operator's choice

    @property
    def line(self) -> str:
        if self.problem:
            return f"refused          {self.label}  {self.problem}"
        assert self.source is not None
        if self.kept_instead:
            return f"not loaded       {self.label}  {self.kept_instead}"
        notes = [f"unscorable here: {self.source.unscorable}"] if self.source.unscorable else []
        notes += [f"{len(self.source.warnings)} warning(s)"] if self.source.warnings else []
        verdict = "definition only" if self.source.definition_only else "loadable"
        return f"{verdict:<16} {self.label}  {'; '.join(notes)}".rstrip()


def _catalog_owner(task_id: str, directory: Path) -> str | None:
    """Where the catalog already has `task_id` from, if that is another directory still on disk."""
    existing = Task.objects.filter(id=task_id).exclude(status=Task.Status.RETIRED).values_list(
        "source_dir", flat=True).first()
    if not existing or Path(existing).resolve() == directory.resolve():
        return None
    return existing if any((Path(existing) / n).is_file() for n in ("task.yaml", "task_meta.yaml")) else None


def catalog_check(*, roots: list[Path], on_id_clash: str | None = None) -> list[Verdict]:
    """Read every task directory under `roots` as catalog_load would, and say what it would do.

    Nothing is generated or stored. Each `<domain>/<task>/` directory gets one verdict: loadable,
    definition only (published without generator), or refused with the reason; none is skipped.
    Ids: a directory whose id another directory already holds (in the catalog, or earlier in
    `roots`) follows `on_id_clash` (settings.CATALOG_ID_CLASH): refuse names both sources,
    keep leaves the newcomer out, replace lets the newcomer win.
    """
    policy = on_id_clash or settings.CATALOG_ID_CLASH
    verdicts: list[Verdict] = []
    owner: dict[str, int] = {}  # task id -> index in verdicts of the directory that holds it
    for root in roots:
        for directory in candidate_task_dirs(root):
            label = f"{directory.parent.name}/{directory.name}"
            try:
                source = read_task_dir(directory, root, agent_judge_ceiling=settings.AGENT_JUDGE_MAX_TIMEOUT_SECONDS)
            except TaskProblem as exc:
                verdicts.append(Verdict(directory, label, None, str(exc)))
                continue
            except Exception as exc:  # a broken task must not stop the others
                logger.exception("could not read task %s", label)
                verdicts.append(Verdict(directory, label, None, f"{type(exc).__name__}: {exc}"))
                continue
            verdict = Verdict(directory, source.task_id, source)
            earlier = owner.get(source.task_id)
            other = str(verdicts[earlier].directory) if earlier is not None else _catalog_owner(
                source.task_id, directory)
            if other is None:
                owner[source.task_id] = len(verdicts)
                verdicts.append(verdict)
                continue
            clash = f"id {source.task_id} is also defined by {other}; this directory is {directory}"
            if policy == "keep":
                verdicts.append(dataclasses.replace(verdict, kept_instead=f"{clash}: kept {other} (id clash: keep)"))
            elif policy == "replace":
                if earlier is not None:
                    verdicts[earlier] = dataclasses.replace(
                        verdicts[earlier], kept_instead=f"{clash}: replaced by {directory} (id clash: replace)")
                owner[source.task_id] = len(verdicts)
                verdicts.append(verdict)
            else:
                hint = "set ASIBENCH_CATALOG_ID_CLASH (or --on-id-clash) to keep or replace to choose one"
                verdicts.append(dataclasses.replace(verdict, problem=f"{clash}; {hint}"))
    return verdicts


def catalog_load(
    *,
    tasks_root: Path | list[Path] | None = None,
    dataset_names: Iterable[str] = ("seed42", "seed31415"),
    only_tasks: set[str] | None = None,
    echo: Callable[[str], None] | None = None,
    backend: SandboxBackend | None = None,
    on_id_clash: str | None = None,
) -> LoadReport:
    """Load `tasks/` into the catalog and generate each dataset's instances.

    Idempotent and incremental: a task whose files are unchanged keeps its instances.
    A task that fails is reported by name and left out; the others still load. A task
    published without its generator is loaded for its scoring contract only
    ("definition only: not generated").
    """
    roots = [Path(tasks_root)] if isinstance(tasks_root, (str, Path)) else [
        Path(r) for r in (tasks_root or catalog_roots())
    ]
    # Before any write: without a usable sandbox no generator can run (BackendUnavailable, one line).
    backend = backend or server_backend(settings.SCORING_SANDBOX)
    datasets = {d.name: d for d in datasets_ensure()}
    wanted = [datasets[name] for name in dataset_names]
    # The operator's own task directories: official generators may run for minutes per instance.
    maintainer_limits = generation_limits(settings, settings.CATALOG_GENERATION_TIMEOUT_SECONDS)
    report = LoadReport()
    seen: set[str] = set()
    for verdict in catalog_check(roots=roots, on_id_clash=on_id_clash):
        if verdict.source is None or verdict.problem:
            report.add(LoadLine(verdict.label, "", "failed", verdict.problem), echo)
            if verdict.source is not None:
                seen.add(verdict.source.task_id)  # refused for now, not gone: keep what the catalog has
            continue
        source = verdict.source
        seen.add(source.task_id)
        if verdict.kept_instead:
            report.add(LoadLine(source.task_id, "", "kept", verdict.kept_instead), echo)
            continue
        if only_tasks and source.task_id not in only_tasks:
            continue
        task = _task_upsert(source)
        for warning in source.warnings:
            report.add(LoadLine(source.task_id, "", "warning", warning), echo)
        if source.unscorable:
            report.add(LoadLine(source.task_id, "", "warning", f"unscorable here: {source.unscorable}"), echo)
        if source.definition_only:
            report.add(LoadLine(source.task_id, "", "definition", "definition only: not generated"), echo)
            continue
        _instances_generate(source, task, wanted, backend, maintainer_limits, report, echo)
    if only_tasks is None:
        _tasks_gone_retire(seen, report, echo)
    _tasks_failed_everywhere_drop(report)
    return report


def _instances_generate(source: TaskSource, task: Task, wanted: list[Dataset], backend: SandboxBackend,
                        limits: Limits, report: LoadReport, echo: Callable[[str], None] | None) -> None:
    """Generate and store the task's instances of `wanted` datasets whose task files changed (or that it lacks);
    none is stored when the seeds' references would reveal each other."""
    stale = []
    for dataset in wanted:
        current = Instance.objects.filter(task=task, dataset=dataset).first()
        if current is not None and current.task_source_hash == source.source_hash:
            report.add(LoadLine(source.task_id, dataset.name, "unchanged"), echo)
        else:
            stale.append(dataset)
    with scratch_tree("asibench-gen-", scratch_root()) as tmp:
        built = []
        for dataset in stale:
            try:
                built.append(instance_build(source=source, dataset=dataset, scratch=tmp / dataset.name,
                                            backend=backend, limits=limits))
            except TaskProblem as exc:
                report.add(LoadLine(source.task_id, dataset.name, "failed", str(exc)), echo)
        refused = seeds_reveal_each_other(built)
        for item in built:
            if refused:
                report.add(LoadLine(source.task_id, item.dataset.name, "failed", refused), echo)
                continue
            with transaction.atomic():
                instance_store(built=item, source=source, task=task)
            report.add(LoadLine(source.task_id, item.dataset.name, "generated"), echo)


def _tasks_gone_retire(seen: set[str], report: LoadReport, echo: Callable[[str], None] | None) -> None:
    # Tasks published from proposals are the proposals' to retire: this host's published dir
    # may simply not hold a task another worker host published.
    gone = Task.objects.exclude(id__in=seen).exclude(status=Task.Status.RETIRED).exclude(
        source_dir__startswith=str(settings.PUBLISHED_TASKS_DIR))
    for task in gone:
        report.add(LoadLine(task.id, "", "retired", "no longer on disk"), echo)
    gone.update(status=Task.Status.RETIRED)


def _tasks_failed_everywhere_drop(report: LoadReport) -> None:
    # A task whose generation failed in every dataset has nothing to offer: keep it out.
    failed_everywhere = {
        line.task for line in report.failures if line.dataset
    } - {line.task for line in report.lines if line.outcome in {"generated", "unchanged"}}
    for task_id in failed_everywhere:
        Task.objects.filter(id=task_id, instances__isnull=True).delete()


def catalog_install(*, directory: Path, link: Path, dataset_names: Iterable[str]) -> Task:
    """Put the task in `directory` into the catalog as `link`, all or nothing.

    Every instance is generated and checked first, touching neither the catalog nor `link`.
    Then one transaction points the task and its instances at the new archives, and, as its
    last step, `link` (a symbolic link next to `directory`) is swapped to `directory` by one
    rename. Raises TaskProblem, and changes nothing, when any of it fails.
    """
    staged = read_task_dir(directory, link.parent.parent, proposal=True,
                           agent_judge_ceiling=settings.AGENT_JUDGE_MAX_TIMEOUT_SECONDS)
    source = dataclasses.replace(staged, directory=link)
    datasets = {d.name: d for d in datasets_ensure()}
    with scratch_tree("asibench-publish-", scratch_root()) as tmp:
        built = [instance_build(source=staged, dataset=datasets[name], scratch=tmp / name)
                 for name in dataset_names]
        refused = seeds_reveal_each_other(built)
        if refused:
            raise TaskProblem(refused)
        previous = link.resolve() if link.is_symlink() else None
        swapped = False
        try:
            with transaction.atomic():
                task = _task_upsert(source, files=directory)
                for item in built:
                    instance_store(built=item, source=source, task=task)
                _swap_link(link, directory)
                swapped = True
        except BaseException:
            if swapped:  # the commit failed after the swap: point the link back
                if previous is not None:
                    _swap_link(link, previous)
                else:
                    link.unlink()
            raise
    if previous is not None and previous != directory.resolve():
        shutil.rmtree(previous, ignore_errors=True)
    return task


def _swap_link(link: Path, directory: Path) -> None:
    """Make `link` point at `directory` (a sibling) with one atomic rename."""
    if link.exists() and not link.is_symlink():
        # A directory published before links were used: move it aside once.
        link.rename(link.with_name(f".{link.name}.legacy-{os.getpid()}"))
    temporary = link.with_name(f".{link.name}.swap-{os.getpid()}")
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(directory.name)
    os.replace(temporary, link)

