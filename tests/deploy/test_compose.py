"""docker-compose.yml as the compose tool resolves it (podman-compose 1.6, pinned in requirements/test.txt):
the properties that let the worker score in sibling containers and keep the engine socket contained."""

import secrets
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.support import REPO

VENV_BIN = Path(__file__).resolve().parents[2] / ".venv" / "bin"
SOCKET = "/var/run/docker.sock"


# What an operator's .env must hold: compose has no default for any of them.
REQUIRED = {"SECRET_KEY": "test-only", "POSTGRES_PASSWORD": "pg-test-pw", "REDIS_PASSWORD": "redis-test-pw",
            "S3_SECRET_ACCESS_KEY": "s3-test-pw"}


def render(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "podman-compose"), *args, "-f", str(REPO / "docker-compose.yml"),
                           "--profile", "build", "config"],
                          env={"PATH": "/usr/bin:/bin", **env}, capture_output=True, text=True, cwd=REPO,
                          timeout=60)


def compose_config(**env: str) -> dict:
    done = render({**REQUIRED, **env})
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


def test_only_the_worker_and_the_catalog_load_reach_the_engine(config):
    services = config["services"]
    holders = [name for name, svc in services.items() if any(SOCKET in s or SOCKET in t for s, t in binds(svc))]
    assert sorted(holders) == ["catalog", "worker"]
    for name in holders:
        assert services[name]["environment"]["DOCKER_HOST"] == f"unix://{SOCKET}"
    assert all("DOCKER_HOST" not in (svc.get("environment") or {}) for name, svc in services.items()
               if name not in holders)
    assert compose_config(ASIBENCH_ENGINE_SOCKET="/run/asibench-podman.sock")["services"]["worker"]["volumes"][1] \
        == f"/run/asibench-podman.sock:{SOCKET}"


def test_sandboxed_work_runs_in_the_worker_not_the_web_tier(config):
    services = config["services"]
    assert "celery -A config worker" in " ".join(services["worker"]["command"])
    assert "-Q celery,proposals" in " ".join(services["worker"]["command"])  # scoring's queue and the proposals' own
    assert "catalog_load" in " ".join(services["catalog"]["command"])
    assert "celery" not in " ".join(services["web"]["command"])
    assert services["worker"]["environment"]["ASIBENCH_SANDBOX"] == "docker"


def test_workers_scale_with_nothing_per_container_that_clashes(config):
    """`docker compose up --scale worker=N`: no fixed name or host port, no shared dir rewritten at start
    (the catalog is loaded once, by the one-shot `catalog` service the workers wait for)."""
    worker = config["services"]["worker"]
    assert "container_name" not in worker and "ports" not in worker and "hostname" not in worker
    command = " ".join(worker["command"])
    assert "catalog_load" not in command and "rm -rf" not in command and "cp " not in command
    assert "--hostname" not in command, "Celery names each worker after its own container"
    assert worker["depends_on"]["catalog"]["condition"] == "service_completed_successfully"


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


def test_the_web_port_is_published_on_loopback_only(config):
    # NUM_PROXIES=1 trusts one X-Forwarded-For hop: a client reaching gunicorn directly would
    # forge it and reset every per-IP limit, so only the proxy on this host may reach the port.
    # Prometheus's UI is on loopback too; S3, the database, Redis and the metrics ports not at all.
    services = config["services"]
    assert services["web"]["environment"]["NUM_PROXIES"] == "1"
    published = {name: svc["ports"] for name, svc in services.items() if svc.get("ports")}
    assert published == {"web": ["127.0.0.1:8000:8000"], "prometheus": ["127.0.0.1:9090:9090"]}


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_compose_refuses_to_start_without_each_secret(name):
    for missing in ({k: v for k, v in REQUIRED.items() if k != name}, {**REQUIRED, name: ""}):
        done = render(missing)
        assert done.returncode != 0
        assert f"set {name} in .env" in done.stderr


def test_no_password_is_baked_into_the_compose_file(config):
    text = (REPO / "docker-compose.yml").read_text()
    for default in ("asibench-secret", "POSTGRES_PASSWORD: asibench", "postgres://asibench:asibench@"):
        assert default not in text
    services = config["services"]
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == "pg-test-pw"
    # S3 gets its key from its environment; its command line names the variable, never the value.
    assert services["s3"]["environment"]["S3_SECRET_ACCESS_KEY"] == "s3-test-pw"
    assert "$S3_SECRET_ACCESS_KEY" in " ".join(services["s3"]["command"])
    assert "s3-test-pw" not in " ".join(services["s3"]["command"] + services["s3"]["entrypoint"])
    for name in ("web", "worker", "beat", "s3-bucket"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"] == "postgres://asibench:pg-test-pw@postgres:5432/asibench"
        assert env["ASIBENCH_S3_SECRET_ACCESS_KEY"] == "s3-test-pw"
        assert env["ASIBENCH_S3_ACCESS_KEY_ID"] == services["s3"]["environment"]["S3_ACCESS_KEY_ID"]


def test_redis_requires_the_password_the_broker_and_cache_urls_carry(config):
    services = config["services"]
    command = services["redis"]["command"]
    assert command[command.index("--requirepass") + 1] == "redis-test-pw"
    for name in ("web", "worker", "beat"):
        env = services[name]["environment"]
        assert env["CELERY_BROKER_URL"] == "redis://:redis-test-pw@redis:6379/0"
        assert env["CACHE_URL"] == "redis://:redis-test-pw@redis:6379/1"


def test_debug_is_off_unless_asked_for(config, tmp_path):
    assert {config["services"][n]["environment"]["DEBUG"] for n in ("web", "worker", "beat")} == {"0"}
    assert compose_config(DEBUG="1")["services"]["web"]["environment"]["DEBUG"] == "1"
    # An operator who starts .env from .env.example (its secrets filled in) still gets production.
    env_file = tmp_path / ".env"
    env_file.write_text((REPO / ".env.example").read_text() + "".join(f"{k}={v}\n" for k, v in REQUIRED.items()))
    done = render({}, "--env-file", str(env_file))
    assert done.returncode == 0, done.stderr
    web = yaml.safe_load(done.stdout)["services"]["web"]
    assert web["environment"]["DEBUG"] == "0"
    assert web["ports"] == ["127.0.0.1:8000:8000"]


def test_s3_is_seaweedfs_and_our_own_command_makes_the_bucket(config):
    services = config["services"]
    assert "minio" not in (REPO / "docker-compose.yml").read_text().lower()
    assert services["s3"]["image"].startswith("chrislusf/seaweedfs:")
    assert "weed server" in " ".join(services["s3"]["command"]) and "-s3 " in " ".join(services["s3"]["command"])
    bucket_job = services["s3-bucket"]
    assert bucket_job["build"]["dockerfile"] == "docker/Dockerfile"
    assert bucket_job["command"][:3] == ["python", "manage.py", "storage_bucket_create"]
    assert services["web"]["depends_on"]["s3-bucket"]["condition"] == "service_completed_successfully"
    for name in ("web", "worker", "beat"):
        assert services[name]["environment"]["ASIBENCH_S3_ENDPOINT_URL"] == "http://s3:8333"


def test_metrics_are_served_inside_the_compose_network_and_prometheus_scrapes_them(config):
    services = config["services"]
    for name in ("web", "worker"):
        env = services[name]["environment"]
        assert env["ASIBENCH_METRICS_LISTEN"] == "0.0.0.0:9100"
        assert env["PROMETHEUS_MULTIPROC_DIR"]  # gunicorn's and Celery's children report to their parent
        assert not any("9100" in port for port in services[name].get("ports", []))
    assert "-c config/gunicorn.py" in " ".join(services["web"]["command"])
    scrape = yaml.safe_load((REPO / "docker" / "prometheus.yml").read_text())["scrape_configs"]
    targets = {(job["dns_sd_configs"][0]["names"][0], job["dns_sd_configs"][0]["port"]) for job in scrape}
    assert targets == {("web", 9100), ("worker", 9100)}
    assert any("prometheus.yml" in volume for volume in services["prometheus"]["volumes"])


def test_sentry_is_off_unless_the_operator_sets_its_dsn(config):
    services = config["services"]
    assert {services[n]["environment"]["SENTRY_DSN"] for n in ("web", "worker", "beat")} == {""}
    dsn = "https://public@sentry.example/1"
    assert compose_config(SENTRY_DSN=dsn)["services"]["worker"]["environment"]["SENTRY_DSN"] == dsn


def test_the_compose_environment_passes_the_deploy_check(tmp_path):
    """`manage.py check --deploy` with the web service's environment exactly as compose renders it (the
    operator's .env holding only the required secrets), paths on this machine aside."""
    env = compose_config(SECRET_KEY=secrets.token_urlsafe(60))["services"]["web"]["environment"]
    env = {key: str(value) for key, value in env.items()}
    env.update(ASIBENCH_VAR_DIR=str(tmp_path / "var"), ASIBENCH_TASKS_DIR=str(tmp_path / "tasks"),
               PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "metrics"), PATH="/usr/bin:/bin")
    done = subprocess.run([str(VENV_BIN / "python"), "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout
    assert env["DEBUG"] == "0" and env["ASIBENCH_METRICS_LISTEN"] and env["ASIBENCH_S3_ENDPOINT_URL"]


def test_the_settings_the_operator_section_puts_in_env_reach_the_containers():
    given = {"ALLOWED_HOSTS": "portal.example.org", "CSRF_TRUSTED_ORIGINS": "https://portal.example.org",
             "ASIBENCH_PUBLIC_URL": "https://portal.example.org", "EMAIL_HOST": "smtp.example.org",
             "EMAIL_HOST_USER": "portal@example.org", "EMAIL_HOST_PASSWORD": "smtp-pw",
             "DEFAULT_FROM_EMAIL": "Portal <portal@example.org>"}
    services = compose_config(**given)["services"]
    for name in ("web", "worker", "beat"):
        assert {k: services[name]["environment"][k] for k in given} == given
    defaults = compose_config()["services"]["web"]["environment"]
    assert defaults["DEFAULT_FROM_EMAIL"] == "ASI-Bench Portal <noreply@asibench.local>"
    assert defaults["EMAIL_PORT"] == "587" and defaults["CSRF_TRUSTED_ORIGINS"] == ""


def test_backups_never_reach_an_image_or_git():
    # The backup procedure writes private references into backups/ at the top of the checkout, which
    # is the build context of every image.
    assert "backups" in (REPO / ".dockerignore").read_text().split()
    assert "backups/" in (REPO / ".gitignore").read_text().split()
