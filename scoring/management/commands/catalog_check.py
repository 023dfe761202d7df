from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.task_loading import catalog_check


class Command(BaseCommand):
    help = ("Check a tasks tree before loading it: one line per task directory with its verdict "
            "(loadable / definition only / refused and why). Generates and stores nothing.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("tasks_dir", type=Path, nargs="+")
        parser.add_argument("--on-id-clash", choices=("refuse", "keep", "replace"), default=None)

    def handle(self, *args: object, **options: object) -> None:
        roots = [Path(p) for p in options["tasks_dir"]]  # type: ignore[attr-defined]
        missing = [str(r) for r in roots if not r.is_dir()]
        if missing:
            raise CommandError(f"not a directory: {', '.join(missing)}")
        verdicts = catalog_check(roots=roots, on_id_clash=options["on_id_clash"])  # type: ignore[arg-type]
        for verdict in verdicts:
            self.stdout.write(verdict.line)
            for warning in verdict.source.warnings if verdict.source and not verdict.problem else ():
                self.stdout.write(f"{'':17}warning: {warning}")
        refused = [v for v in verdicts if v.problem]
        definition = [v for v in verdicts if v.source and not v.problem and v.source.definition_only]
        unscorable = [v for v in verdicts if v.source and not v.problem and v.source.unscorable]
        self.stdout.write(
            f"{len(verdicts)} directories: {len(verdicts) - len(refused)} loadable "
            f"({len(definition)} definition only, {len(unscorable)} unscorable here), {len(refused)} refused"
        )
        if refused:
            raise CommandError(f"{len(refused)} task directories would be refused")
