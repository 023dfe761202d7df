"""scripts/ensure-container-engine.sh is idempotent: with the engine up and the image current
(as `make test` left them), a second run changes nothing and says so."""

import os
import subprocess
from pathlib import Path

import pytest

from tests.support import REPO

pytestmark = pytest.mark.slow
SCRIPT = REPO / "scripts" / "ensure-container-engine.sh"


def service_pids() -> list[str]:
    done = subprocess.run(["pgrep", "-f", "podman system service --time=0 unix:///run/asibench-podman.sock"],
                          capture_output=True, text=True)
    return done.stdout.split()


def image_id() -> str:
    return subprocess.run(["podman", "image", "inspect", "--format", "{{.Id}}", "asibench-scoring:1.0.0"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_a_second_run_keeps_the_service_and_the_image():
    pids, image = service_pids(), image_id()
    assert len(pids) == 1, pids
    done = subprocess.run([str(SCRIPT)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines() == [
        "container engine: ready on unix:///run/asibench-podman.sock with image asibench-scoring:1.0.0"]
    assert service_pids() == pids and image_id() == image
    assert "[engine]" in (open("/etc/containers/containers.conf").read())


def test_the_service_runs_outside_any_checkout():
    # conmon drops an `oom` file into the service's working directory when a container is
    # memory-killed; started from the checkout, that file landed in the repository root.
    (pid,) = service_pids()
    cwd = Path(f"/proc/{pid}/cwd").resolve()
    assert cwd == Path(os.environ.get("ASIBENCH_ENGINE_LOG_DIR", "/var/log/asibench")), cwd
    assert REPO not in (cwd, *cwd.parents)
