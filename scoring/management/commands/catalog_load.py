from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.catalog import catalog_load


class Command(BaseCommand):
    help = "Load tasks/ into the catalog and generate the datasets' instances (idempotent, incremental)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tasks-dir", type=Path, default=None)
        parser.add_argument("--datasets", default="seed42,seed31415")
        parser.add_argument("--tasks", default="", help="Comma-separated task ids (default: all).")
        parser.add_argument("--strict", action="store_true", help="Exit non-zero if any task failed.")

    def handle(self, *args: object, **options: object) -> None:
        only = {t.strip() for t in str(options["tasks"]).split(",") if t.strip()} or None
        report = catalog_load(
            tasks_root=options["tasks_dir"],  # type: ignore[arg-type]
            dataset_names=[d.strip() for d in str(options["datasets"]).split(",") if d.strip()],
            only_tasks=only,
            echo=self.stdout.write,
        )
        failures = report.failures
        self.stdout.write(f"{len(report.lines) - len(failures)} ok, {len(failures)} failed")
        if failures and options["strict"]:
            raise CommandError("; ".join(f"{f.task}: {f.detail}" for f in failures))
