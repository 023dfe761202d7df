from django.core.management.base import BaseCommand

from portal.submissions.services import drafts_expire


class Command(BaseCommand):
    help = "Expire unconfirmed drafts past ASIBENCH_DRAFT_TTL_HOURS and delete their archives."

    def handle(self, *args: object, **options: object) -> None:
        self.stdout.write(f"{drafts_expire()} draft(s) expired")
