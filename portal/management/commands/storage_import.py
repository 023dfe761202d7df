from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from portal.storage_ops import StorageOpError, storage_import


class Command(BaseCommand):
    help = ("Put a storage_export back into the configured storage, checking every object's SHA-256 "
            "(restore into an empty bucket; docs/operators.md).")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("source", type=Path, help="A directory made by storage_export.")

    def handle(self, *args: object, **options: object) -> None:
        try:
            report = storage_import(source=options["source"])  # type: ignore[arg-type]
        except StorageOpError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"Imported {report.files} objects ({report.bytes} bytes); "
                          f"{report.skipped} already there with the same content.")
