from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from portal.storage_ops import StorageOpError, storage_export


class Command(BaseCommand):
    help = ("Copy every stored object (bundles, references, instance archives, task files) into a new directory, "
            "with a manifest of SHA-256s: the storage half of a backup (docs/operators.md).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dest", type=Path, help="A new or empty directory.")

    def handle(self, *args: object, **options: object) -> None:
        try:
            report = storage_export(dest=options["dest"])  # type: ignore[arg-type]
        except StorageOpError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Exported {report.files} objects ({report.bytes} bytes) to {options['dest']}.")
