import argparse
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.sandbox import SandboxError
from scoring.task_loading import catalog_load


class Command(BaseCommand):
    help = ("Load tasks/ into the catalog and generate the datasets' instances (idempotent, incremental). "
            "Exits non-zero when any task directory could not be loaded, each named with its reason.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tasks-dir", type=Path, default=None)
        parser.add_argument("--datasets", default="seed42,seed31415")
        parser.add_argument("--tasks", default="", help="Comma-separated task ids (default: all).")
        parser.add_argument("--on-id-clash", choices=("refuse", "keep", "replace"), default=None,
                            help="Two directories with one id: refuse both new ones (default: "
                                 "ASIBENCH_CATALOG_ID_CLASH), keep the catalog's, or replace it.")
        # Kept so existing scripts still work: failures always make the exit status non-zero now.
        parser.add_argument("--strict", action="store_true", help=argparse.SUPPRESS)

    def handle(self, *args: object, **options: object) -> None:
        only = {t.strip() for t in str(options["tasks"]).split(",") if t.strip()} or None
        try:
            report = catalog_load(
                tasks_root=options["tasks_dir"],  # type: ignore[arg-type]
                dataset_names=[d.strip() for d in str(options["datasets"]).split(",") if d.strip()],
                only_tasks=only,
                echo=self.stdout.write,
                on_id_clash=options["on_id_clash"],  # type: ignore[arg-type]
            )
        except SandboxError as exc:  # generators run sandboxed: without a sandbox nothing can be loaded
            raise CommandError(f"cannot load the catalog: no usable sandbox on this host: {exc}") from exc
        failures = report.failures
        definition = sum(1 for line in report.lines if line.outcome == "definition")
        self.stdout.write(f"{len(report.lines) - len(failures)} ok ({definition} definition only), "
                          f"{len(failures)} failed")
        if failures:
            raise CommandError("could not load: " + "; ".join(f"{f.task}: {f.detail}" for f in failures))

