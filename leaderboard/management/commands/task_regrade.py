from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.regrade import regrade_start
from scoring.models import Task


class Command(BaseCommand):
    help = ("Queue (again) the re-grade of every board entry scored on an older revision of TASK_ID than its "
            "current one: publishing a fixed revision starts it; this resumes one whose messages were lost.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("task_id")

    def handle(self, *args: object, **options: object) -> None:
        task = Task.objects.filter(id=options["task_id"]).first()
        if task is None:
            raise CommandError(f"no task {options['task_id']!r} in the catalog")
        queued = regrade_start(task=task)
        self.stdout.write(f"{len(queued)} board entr{'y' if len(queued) == 1 else 'ies'} of {task.id} queued for "
                          f"re-grading against revision {task.revision}")
