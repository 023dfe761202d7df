from django.core.management.base import BaseCommand, CommandError, CommandParser

from portal.storage_ops import StorageOpError, bucket_ensure


class Command(BaseCommand):
    help = "Create the S3 bucket ASIBENCH_S3_BUCKET names, if missing, and check it is private (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--wait", type=float, default=0, metavar="SECONDS",
                            help="Keep trying this long while S3 does not answer yet (compose starts it alongside).")

    def handle(self, *args: object, **options: object) -> None:
        try:
            state = bucket_ensure(wait_seconds=float(options["wait"]))  # type: ignore[arg-type]
        except StorageOpError as exc:
            raise CommandError(str(exc)) from None
        messages = {"created": "Bucket created (private).", "exists": "Bucket already there (private).",
                    "filesystem": "Storage is the local filesystem (ASIBENCH_S3_BUCKET unset): no bucket to create."}
        self.stdout.write(messages[state])
