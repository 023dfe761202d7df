"""The Docker backend's isolation lives in one pure method; Docker itself is absent here."""

from pathlib import Path

import pytest

from scoring.sandbox import Limits, SandboxError, get_backend
from scoring.sandbox.docker_backend import CONTAINER_INIT, DEFAULT_IMAGE, DockerBackend


@pytest.fixture
def config(tmp_path: Path) -> dict:
    reference = tmp_path / "reference"
    reference.mkdir()
    limits = Limits(wall_clock_seconds=30, cpu_seconds=20, memory_bytes=512 << 20,
                    max_processes=16, max_file_bytes=4 << 20, env={"TASK": "t1"})
    backend = DockerBackend(image="img:1")
    return backend.container_config(["python", "-m", "scoring.engine"], tmp_path / "work",
                                     [reference, (reference, "/ref")], limits)


def test_its_init_is_the_sealed_one_and_runs_the_command(config):
    assert config["command"] == [*CONTAINER_INIT, "python", "-m", "scoring.engine"]
    assert config["init"] is False


def test_it_isolates_the_container(config):
    assert config["network_mode"] == "none"
    assert config["read_only"] is True
    assert config["cap_drop"] == ["ALL"]
    assert config["security_opt"] == ["no-new-privileges"]
    assert config["user"] == "65534:65534"
    assert config["ipc_mode"] == "private"
    assert "privileged" not in config


def test_it_applies_the_limits(config):
    assert config["mem_limit"] == config["memswap_limit"] == 512 << 20
    assert config["pids_limit"] == 16
    assert config["nano_cpus"] == 1_000_000_000
    ulimits = {u["name"]: (u["soft"], u["hard"]) for u in config["ulimits"]}
    assert ulimits == {"cpu": (20, 21), "fsize": (4 << 20, 4 << 20), "core": (0, 0), "nofile": (4096, 4096),
                       "nproc": (16384, 16384)}
    assert config["tmpfs"]["/tmp"].endswith(f"size={512 << 20}")


def test_only_the_workdir_is_writable(config, tmp_path):
    work = str((tmp_path / "work").resolve())
    reference = str((tmp_path / "reference").resolve())
    assert config["working_dir"] == work
    assert config["mounts"] == [
        {"Type": "bind", "Source": work, "Target": work, "ReadOnly": False},
        {"Type": "bind", "Source": reference, "Target": reference, "ReadOnly": True},
        {"Type": "bind", "Source": reference, "Target": "/ref", "ReadOnly": True},
    ]


def test_the_environment_is_only_what_was_given(config, monkeypatch):
    monkeypatch.setenv("ASIBENCH_TEST_SECRET", "x")
    assert config["environment"]["TASK"] == "t1"
    assert "ASIBENCH_TEST_SECRET" not in config["environment"]
    assert set(config["environment"]) >= {"PATH", "HOME", "LANG"}


def test_network_is_opt_in(tmp_path):
    cfg = DockerBackend().container_config(["true"], tmp_path, [], Limits(network=True))
    assert cfg["network_mode"] == "bridge"


def test_the_image_comes_from_the_argument_then_the_environment(monkeypatch):
    monkeypatch.delenv("ASIBENCH_SANDBOX_IMAGE", raising=False)
    from scoring.engine.version import ENGINE_VERSION

    assert DockerBackend().image == DEFAULT_IMAGE == f"asibench-scoring:{ENGINE_VERSION}"
    monkeypatch.setenv("ASIBENCH_SANDBOX_IMAGE", "registry/scoring:7")
    assert get_backend("docker").image == "registry/scoring:7"
    assert DockerBackend(image="explicit:1").image == "explicit:1"


def test_it_refuses_an_empty_command(tmp_path):
    with pytest.raises(SandboxError):
        DockerBackend().container_config([], tmp_path, [], Limits())


def test_the_config_is_accepted_by_the_docker_sdk(config):
    from docker.models.containers import _create_container_args

    args = _create_container_args({**config, "version": "1.44"})
    host = args["host_config"]
    assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
    assert host["PidsLimit"] == 16 and host["CapDrop"] == ["ALL"]
