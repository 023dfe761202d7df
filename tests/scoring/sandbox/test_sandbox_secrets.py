"""A sandbox's environment holds what its caller puts there, keys included (an agent judge's, an agent's under
`asibench run`). Another local user must not read it: not on bwrap's command line in /proc/<pid>/cmdline,
which every user can read, and not in any /proc/<pid>/environ they can open, while the sandbox runs."""

import uuid

import pytest

from tests.support import ProcScanner

pytestmark = pytest.mark.slow


def test_no_value_of_the_sandbox_environment_is_on_a_command_line_or_readable_by_another_user(
        bwrap, workdir, runtime, limits):
    key = f"k{uuid.uuid4().hex}"
    marker = f"2.{uuid.uuid4().int % 10**6:06d}"
    env = {**limits.env, "SOME_API_KEY": key}
    with ProcScanner(key, f"sleep {marker}") as scanner:
        result = bwrap.run(["sh", "-c", f'printf %s "$SOME_API_KEY"; sleep {marker}'], workdir, runtime,
                           limits.replace(env=env))
    assert result.ok, result.stderr_text
    assert result.stdout_text == key  # the command got its variable
    found = scanner.found
    assert found["marked_seen"] > 0, "the scan overlapped the run"
    assert found["cmdline"] == [], found["cmdline"]
    assert found["environ"] == [], found
