"""gunicorn reads this file from its working directory: the checkout, where `make run`, the tests and the
image start it. Django's debug page is for this machine only, so a server with DEBUG on refuses to start
on a bind other machines can reach (portal/loopback.py)."""

import sys


def on_starting(server: object) -> None:
    from config.settings import DEBUG
    from portal.loopback import debug_bind_problem

    binds = list(server.cfg.bind)  # type: ignore[attr-defined]
    problem = debug_bind_problem(binds) if DEBUG else None
    if problem:
        print(f"Refusing to start: DEBUG is on (DEBUG=1, or DEBUG unset) and {problem}. Django's debug page "
              "shows settings, source and request data to whoever asks. Bind 127.0.0.1 (as `make run` does) "
              "for development, or set DEBUG=0 (with SECRET_KEY and ALLOWED_HOSTS) to serve others.",
              file=sys.stderr, flush=True)
        sys.exit(3)
