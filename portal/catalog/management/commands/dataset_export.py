"""`manage.py dataset_export --layout hf DIR`: a dataset as the files of a Hugging Face dataset repo."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from portal.hub import selectors as hub


class Command(BaseCommand):
    help = ("Write a dataset's public files in the layout the official client pulls (tasks/<instance_id>/...), "
            "exactly what /hf serves, for publishing to a Hugging Face dataset repo. seed42 references are never "
            "written.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path, help="an empty or missing directory")
        parser.add_argument("--layout", choices=["hf"], default="hf")
        parser.add_argument("--dataset", default="seed42", help="dataset name or official repo id (default seed42)")
        parser.add_argument("--revision", default=hub.DEFAULT_REVISION)

    def handle(self, *args: Any, **options: Any) -> None:
        directory: Path = options["directory"]
        if directory.exists() and any(directory.iterdir()):
            raise CommandError(f"{directory} is not empty; export into a new directory.")
        try:
            dataset = hub.dataset_for_repo(options["dataset"])
            revision = hub.revision_resolve(dataset, options["revision"])
        except hub.HubError as exc:
            raise CommandError(exc.message) from None
        directory.mkdir(parents=True, exist_ok=True)
        count = hub.export_revision(revision, directory)
        self.stdout.write(f"Exported {dataset.name} revision {revision.sha}: {len(revision.instances)} instances, "
                          f"{count} files -> {directory}/tasks/")
