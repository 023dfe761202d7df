"""Writes on the scoring side: the catalog, datasets and their generated instances."""

import logging
import tarfile
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from scoring.engine import instance_id_for_seed, sample_params
from scoring.generation import (
    TaskProblem,
    TaskSource,
    build_archive,
    discover_task_dirs,
    ensure_prompts,
    public_members,
    read_params_used,
    read_task_dir,
    run_generator,
    tree_hashes,
    write_task_info,
)
from scoring.models import Dataset, Instance, Task
from scoring.sandbox import Limits, SandboxBackend, get_backend

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


def sandbox_backend() -> SandboxBackend:
    return get_backend(settings.SCORING_SANDBOX)


def generation_limits() -> Limits:
    """The server's limits for an author's generator; the task's own YAML never raises them."""
    return Limits(
        wall_clock_seconds=settings.GENERATION_TIMEOUT_SECONDS,
        cpu_seconds=settings.GENERATION_TIMEOUT_SECONDS,
        memory_bytes=settings.SANDBOX_MEMORY_BYTES,
        max_processes=settings.SANDBOX_MAX_PROCESSES,
        max_file_bytes=512 << 20,
        max_scratch_bytes=settings.SANDBOX_SCRATCH_BYTES,
        network=False,
    )


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
    outcome: str  # loaded | unchanged | generated | failed | retired
    detail: str = ""


@dataclass
class LoadReport:
    lines: list[LoadLine] = field(default_factory=list)

    def add(self, line: LoadLine, echo: Callable[[str], None] | None) -> None:
        self.lines.append(line)
        if echo:
            where = f" [{line.dataset}]" if line.dataset else ""
            echo(f"{line.outcome:>9}  {line.task}{where}  {line.detail}".rstrip())

    @property
    def failures(self) -> list[LoadLine]:
        return [line for line in self.lines if line.outcome == "failed"]


def _task_upsert(source: TaskSource) -> Task:
    existing = Task.objects.filter(id=source.task_id).first()
    revision = 1 if existing is None else existing.revision + (existing.source_hash != source.source_hash)
    task, _ = Task.objects.update_or_create(
        id=source.task_id,
        defaults={
            "domain": source.domain,
            "name": source.name,
            "version": source.version,
            "status": source.status,
            "revision": revision,
            "public_meta": source.public_meta,
            "public_eval": source.public_eval,
            "prompts": source.prompts,
            "declared_outputs": source.declared_outputs,
            "source_hash": source.source_hash,
            "source_dir": str(source.directory),
            "loaded_at": timezone.now(),
        },
    )
    return task


def _store(local: Path, name: str) -> str:
    if default_storage.exists(name):
        default_storage.delete(name)
    with local.open("rb") as handle:
        return default_storage.save(name, File(handle, name=local.name))


def instance_generate(
    *, source: TaskSource, task: Task, dataset: Dataset, backend: SandboxBackend | None = None
) -> Instance:
    """Generate one instance twice in the sandbox, prove it deterministic, store it.

    Raises TaskProblem (nothing stored) when the generator fails, times out, touches the
    network or writes different bytes on the second run.
    """
    backend = backend or sandbox_backend()
    params = sample_params(source.task, dataset.seed)
    instance_id = instance_id_for_seed(source.task_id, dataset.seed)
    with tempfile.TemporaryDirectory(prefix="asibench-gen-", dir=scratch_root()) as tmp:
        tmp_path = Path(tmp)
        limits = generation_limits()
        first = run_generator(source, params, tmp_path / "run1", backend, limits)
        second = run_generator(source, params, tmp_path / "run2", backend, limits)
        first_hashes, second_hashes = tree_hashes(first), tree_hashes(second)
        if first_hashes != second_hashes:
            differing = sorted(k for k in first_hashes.keys() | second_hashes.keys()
                               if first_hashes.get(k) != second_hashes.get(k))
            raise TaskProblem(f"generator is not deterministic: {', '.join(differing[:5])} differ between runs")
        ensure_prompts(first, source)
        write_task_info(first, source)
        public_sha, public_bytes = build_archive(
            first, public_members(first, dataset.references_public), instance_id, tmp_path / "public.tar.gz"
        )
        reference_sha, _ = build_archive(first, ["reference"], instance_id, tmp_path / "reference.tar.gz")
        reference_hashes = tree_hashes(first / "reference")
        params_used = read_params_used(first, params)
        with transaction.atomic():
            input_name = _store(tmp_path / "public.tar.gz", f"datasets/{dataset.name}/{instance_id}.tar.gz")
            reference_name = _store(
                tmp_path / "reference.tar.gz", f"private/references/{dataset.name}/{instance_id}.tar.gz"
            )
            instance, _ = Instance.objects.update_or_create(
                instance_id=instance_id,
                defaults={
                    "dataset": dataset,
                    "task": task,
                    "task_revision": task.revision,
                    "task_source_hash": source.source_hash,
                    "params": params_used,
                    "input_archive": input_name,
                    "input_sha256": public_sha,
                    "input_bytes": public_bytes,
                    "reference_archive": reference_name,
                    "reference_sha256": reference_sha,
                    "reference_file_hashes": reference_hashes,
                    "generator_hash": source.generator_hash,
                    "generated_at": timezone.now(),
                },
            )
    return instance


def catalog_roots() -> list[Path]:
    """Where task directories live: the repository's tasks/ and tasks published from proposals."""
    return [Path(settings.TASKS_DIR), Path(settings.PUBLISHED_TASKS_DIR)]


def scratch_root() -> Path:
    """Where sandboxed runs get their private temporary directories (same disk as VAR_DIR)."""
    root = Path(settings.VAR_DIR) / "scratch"
    root.mkdir(parents=True, exist_ok=True)
    return root


def catalog_load(
    *,
    tasks_root: Path | list[Path] | None = None,
    dataset_names: Iterable[str] = ("seed42", "seed31415"),
    only_tasks: set[str] | None = None,
    echo: Callable[[str], None] | None = None,
    backend: SandboxBackend | None = None,
) -> LoadReport:
    """Load `tasks/` into the catalog and generate each dataset's instances.

    Idempotent and incremental: a task whose files are unchanged keeps its instances.
    A task that fails is reported by name and left out; the others still load.
    """
    roots = [Path(tasks_root)] if isinstance(tasks_root, (str, Path)) else [
        Path(r) for r in (tasks_root or catalog_roots())
    ]
    datasets = {d.name: d for d in datasets_ensure()}
    wanted = [datasets[name] for name in dataset_names]
    report = LoadReport()
    seen: set[str] = set()
    for tasks_root, directory in ((root, d) for root in roots for d in discover_task_dirs(root)):
        label = f"{directory.parent.name}/{directory.name}"
        try:
            source = read_task_dir(directory, tasks_root)
        except TaskProblem as exc:
            report.add(LoadLine(label, "", "failed", str(exc)), echo)
            continue
        except Exception as exc:  # a broken task must not stop the others
            logger.exception("could not read task %s", label)
            report.add(LoadLine(label, "", "failed", f"{type(exc).__name__}: {exc}"), echo)
            continue
        seen.add(source.task_id)
        if only_tasks and source.task_id not in only_tasks:
            continue
        task = _task_upsert(source)
        for dataset in wanted:
            current = Instance.objects.filter(task=task, dataset=dataset).first()
            if current is not None and current.task_source_hash == source.source_hash:
                report.add(LoadLine(source.task_id, dataset.name, "unchanged"), echo)
                continue
            try:
                instance_generate(source=source, task=task, dataset=dataset, backend=backend)
            except TaskProblem as exc:
                report.add(LoadLine(source.task_id, dataset.name, "failed", str(exc)), echo)
                continue
            report.add(LoadLine(source.task_id, dataset.name, "generated"), echo)
    if only_tasks is None:
        gone = Task.objects.exclude(id__in=seen).exclude(status=Task.Status.RETIRED)
        for task in gone:
            report.add(LoadLine(task.id, "", "retired", "no longer on disk"), echo)
        gone.update(status=Task.Status.RETIRED)
    # A task whose generation failed in every dataset has nothing to offer: keep it out.
    failed_everywhere = {
        line.task for line in report.failures if line.dataset
    } - {line.task for line in report.lines if line.outcome in {"generated", "unchanged"}}
    for task_id in failed_everywhere:
        Task.objects.filter(id=task_id, instances__isnull=True).delete()
    return report


def reference_extract(instance: Instance, dest: Path) -> Path:
    """Unpack an instance's private reference/ into dest (scoring side only)."""
    with default_storage.open(instance.reference_archive, "rb") as handle, tarfile.open(
        fileobj=handle, mode="r:gz"
    ) as tar:
        tar.extractall(dest, filter="data")
    return dest / instance.instance_id / "reference"

