"""`manage.py dataset_export --layout hf DIR`: datasets as the files of Hugging Face dataset repos."""

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from catalog.hub import selectors as hub
from scoring.models import Dataset


class Command(BaseCommand):
    help = ("Write datasets' public files in the layout the official client pulls (tasks/<instance_id>/...), "
            "exactly what /hf serves, for publishing to Hugging Face dataset repos: with --dataset into DIR, "
            "otherwise every dataset into DIR/<repo name>/. seed42 references are never written.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", type=Path, help="an empty or missing directory")
        parser.add_argument("--layout", choices=["hf"], default="hf")
        parser.add_argument("--dataset", default="", help="one dataset (name or repo id); default: all")
        parser.add_argument("--revision", default=hub.DEFAULT_REVISION)

    def handle(self, *args: Any, **options: Any) -> None:
        directory: Path = options["directory"]
        if directory.exists() and any(directory.iterdir()):
            raise CommandError(f"{directory} is not empty; export into a new directory.")
        try:
            if options["dataset"]:
                targets = [(hub.dataset_for_repo(options["dataset"]), directory)]
            else:
                targets = [(d, directory / hub.repo_name(d).rpartition("/")[2])
                           for d in Dataset.objects.order_by("name")]
            revisions = [(hub.revision_resolve(dataset, options["revision"]), dest) for dataset, dest in targets]
        except hub.HubError as exc:
            raise CommandError(exc.message) from None
        for revision, dest in revisions:
            dest.mkdir(parents=True, exist_ok=True)
            count = hub.export_revision(revision, dest)
            self.stdout.write(f"{hub.repo_name(revision.dataset)} revision {revision.sha}: "
                              f"{len(revision.instances)} instances, {count} files -> {dest}/tasks/")
