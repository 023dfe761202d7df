"""docker-compose.yml as the compose tool resolves it (podman-compose 1.6, pinned in requirements/test.txt):
the properties that let the worker score in sibling containers and keep the engine socket contained."""

import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support import REPO

VENV_BIN = Path(__file__).resolve().parents[2] / ".venv" / "bin"
SOCKET = "/var/run/docker.sock"


def compose_config(**env: str) -> dict:
    done = subprocess.run([str(VENV_BIN / "podman-compose"), "-f", str(REPO / "docker-compose.yml"),
                           "--profile", "build", "config"],
                          env={"PATH": "/usr/bin:/bin", "SECRET_KEY": "test-only", **env},
                          capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout)


def binds(service: dict) -> list[tuple[str, str]]:
    out = []
    for volume in service.get("volumes") or []:
        source, target = volume.split(":")[:2] if isinstance(volume, str) else (volume["source"], volume["target"])
        out.append((source, target))
    return out


@pytest.fixture(scope="module")
def config() -> dict:
    return compose_config()


@pytest.mark.parametrize("host_dir", [None, "/srv/asibench-data"])
def test_the_worker_sees_its_files_at_the_paths_the_engine_binds(host_dir):
    services = compose_config(**({"ASIBENCH_HOST_DIR": host_dir} if host_dir else {}))["services"]
    expected = host_dir or "/var/lib/asibench"
    for name in ("web", "worker", "beat"):
        env = services[name]["environment"]
        assert env["ASIBENCH_VAR_DIR"] == expected
        assert env["ASIBENCH_TASKS_DIR"].startswith(expected + "/")
        # The engine resolves bind sources on the host: the same path on both sides.
        assert (expected, expected) in binds(services[name]), services[name].get("volumes")


def test_only_the_worker_reaches_the_engine(config):
    services = config["services"]
    holders = [name for name, svc in services.items() if any(SOCKET in s or SOCKET in t for s, t in binds(svc))]
    assert holders == ["worker"]
    assert services["worker"]["environment"]["DOCKER_HOST"] == f"unix://{SOCKET}"
    assert all("DOCKER_HOST" not in (svc.get("environment") or {}) for name, svc in services.items()
               if name != "worker")
    assert compose_config(ASIBENCH_ENGINE_SOCKET="/run/asibench-podman.sock")["services"]["worker"]["volumes"][1] \
        == f"/run/asibench-podman.sock:{SOCKET}"


def test_sandboxed_work_runs_in_the_worker_not_the_web_tier(config):
    services = config["services"]
    worker = " ".join(services["worker"]["command"])
    assert "celery -A portal worker" in worker and "catalog_load" in worker
    assert "-Q celery,proposals" in worker  # scoring's queue and the proposals' own
    assert "celery" not in " ".join(services["web"]["command"])
    assert services["worker"]["environment"]["ASIBENCH_SANDBOX"] == "docker"


def test_the_scoring_image_is_built_from_the_scoring_dockerfile_without_pythonpath(config):
    services = config["services"]
    image = services["scoring-image"]
    assert image["build"]["dockerfile"] == "docker/scoring.Dockerfile"
    assert image["image"] == services["worker"]["environment"]["ASIBENCH_SANDBOX_IMAGE"]
    for svc in services.values():
        assert "PYTHONPATH" not in (svc.get("environment") or {})
    dockerfile = (REPO / "docker" / "scoring.Dockerfile").read_text()
    assert "PYTHONPATH" not in "\n".join(line for line in dockerfile.splitlines() if not line.startswith("#"))
    assert "COPY scoring " in dockerfile and "COPY cli_client " in dockerfile


def test_production_takes_only_os_runs_for_seed42(config):
    assert config["services"]["web"]["environment"]["ASIBENCH_SANDBOX_POLICY"] == "official"
