"""Helpers for tests that drive real processes: the CLI clients and the browser."""

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUR_CLI = [sys.executable, "-m", "cli_client"]


def run_cli(argv: list[str], env: dict[str, str], stdin: str = "", timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=env, input=stdin, capture_output=True, text=True, timeout=timeout, cwd=REPO)


def issue_token(user: object, name: str = "cli") -> str:
    from portal.accounts.services import cli_token_create

    return cli_token_create(user=user, name=name).plaintext  # type: ignore[arg-type]


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)
