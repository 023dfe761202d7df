import os

from django.core.management.base import BaseCommand, CommandParser

from portal.accounts.selectors import second_factor_missing
from portal.accounts.services import demo_maintainer_ensure, maintainers_group_ensure


class Command(BaseCommand):
    help = "Create the maintainers group and the demo maintainer (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--no-demo", action="store_true", help="Skip the demo maintainer account.")

    def handle(self, *args: object, **options: object) -> None:
        maintainers_group_ensure()
        if options["no_demo"]:
            return
        email = os.environ.get("ASIBENCH_DEMO_EMAIL", "maintainer@asibench.local")
        password = os.environ.get("ASIBENCH_DEMO_PASSWORD") or None
        user, generated = demo_maintainer_ensure(email=email, password=password)
        if generated:
            self.stdout.write(self.style.WARNING(f"Demo maintainer created: {user.email} / {generated}  (shown once)"))
        else:
            self.stdout.write(f"Demo maintainer: {user.email}")
        if second_factor_missing(user):
            self.stdout.write(f"  Maintainers sign in with a second factor: at the first sign-in the Portal shows a QR "
                              f"code and its secret for an authenticator app (any TOTP app, or `oathtool --totp -b "
                              f"SECRET`), then recovery codes. Until then {user.email} sees only that page.")
