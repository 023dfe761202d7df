"""The CLI's thin entry and its one error boundary, driven in process (tests.support.asibench)."""


import tomllib

from cli_client import CLIENT_NAME, CLIENT_VERSION, __version__
from cli_client.context import CliContext
from cli_client.errors import ExitStatus
from tests.support import REPO, asibench, cli_env


def test_version_and_help_exit_ok(tmp_path):
    env = cli_env(tmp_path)
    assert asibench("--version", env=env).stdout.strip() == \
        f"asibench, version {__version__} (asibench-portal-cli {CLIENT_VERSION})"
    shown = asibench("--help", env=env)
    assert shown.exit_status == ExitStatus.OK and "--traceback" in shown.stdout


def test_the_clients_own_version_is_the_packages():
    # Results record CLIENT_VERSION as `provenance.client`; it is the version pyproject gives the package.
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert (CLIENT_NAME, CLIENT_VERSION) == ("asibench-portal-cli", project["version"])
    assert __version__ == "0.2.0", "framework_version stays the official client's: the dataset policies check it"


def test_an_unknown_command_is_a_usage_error(tmp_path):
    run = asibench("frobnicate", env=cli_env(tmp_path))
    assert run.exit_status == ExitStatus.USAGE and "No such command 'frobnicate'" in run.stderr


def test_a_refusal_is_one_line_unless_the_traceback_is_asked_for(tmp_path):
    env = cli_env(tmp_path)
    plain = asibench("logout", "--endpoint", "portal-without-a-scheme", env=env)
    assert plain.exit_status == ExitStatus.ERROR
    assert plain.stderr.strip() == "Error: The configured endpoint is not a recognized ASI-Bench Portal URL."
    traced = asibench("--traceback", "logout", "--endpoint", "portal-without-a-scheme", env=env)
    assert traced.exit_status == ExitStatus.ERROR
    assert "Traceback (most recent call last)" in traced.stderr and "in api_base" in traced.stderr
    assert traced.stderr.rstrip().endswith("Error: The configured endpoint is not a recognized ASI-Bench Portal URL.")


class _BrokenStore:
    def entries(self) -> dict:
        raise KeyError("credentials")


def test_a_bug_is_reported_as_one_and_the_traceback_shows_where(tmp_path):
    context = CliContext(env=cli_env(tmp_path))
    context.credentials = _BrokenStore()  # type: ignore[assignment]
    run = asibench("auth", "status", env={}, context=context)
    assert run.exit_status == ExitStatus.ERROR
    assert "Error: unexpected KeyError: 'credentials'" in run.stderr
    assert "run the command again with --traceback" in run.stderr and "Traceback" not in run.stderr
    context.show_traceback = False
    traced = asibench("--traceback", "auth", "status", env={}, context=context)
    assert "Traceback (most recent call last)" in traced.stderr and "in entries" in traced.stderr


def test_the_saved_login_is_read_from_the_environment_given(tmp_path):
    env = cli_env(tmp_path)
    assert "Not logged in" in asibench("auth", "status", env=env).stdout
    api = "https://portal.example/api/v1"
    CliContext(env=env).credentials.save(api, "asb_0123456789abcdef", {"email": "ada@lab.example"})
    status = asibench("auth", "status", env=env)
    assert status.exit_status == ExitStatus.OK
    assert f"stored {api}  as" in status.stdout and "ada@lab.example" in status.stdout
    assert "Not logged in" in asibench("auth", "status", env=cli_env(tmp_path / "someone-else")).stdout
