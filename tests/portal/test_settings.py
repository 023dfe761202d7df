"""Settings come from the environment; production refuses insecure defaults."""

import os
import re
import secrets
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def load_settings(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    overridden = {"SECRET_KEY", "DEBUG", "DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL"}
    clean = {k: v for k, v in os.environ.items() if k not in overridden and not k.startswith("ASIBENCH_S3")}
    clean.update(ASIBENCH_VAR_DIR=str(tmp_path), **env)
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from django.conf import settings; "
                               "print(settings.DATABASES['default']['ENGINE'], settings.CELERY_BROKER_URL, "
                               "settings.STORAGES['default']['BACKEND'])"],
        cwd=REPO, env={**clean, "DJANGO_SETTINGS_MODULE": "config.settings"}, capture_output=True, text=True,
    )


def test_embedded_defaults_need_no_services(tmp_path):
    result = load_settings(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "django.db.backends.sqlite3", "filesystem://", "django.core.files.storage.FileSystemStorage"
    ]
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "broker" / "queue").is_dir()


def test_production_refuses_to_start_without_a_secret(tmp_path):
    result = load_settings(tmp_path, DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG=0" in result.stderr


def test_production_refuses_an_insecure_secret(tmp_path):
    result = load_settings(tmp_path, DEBUG="0", SECRET_KEY="django-insecure-" + "x" * 60)
    assert result.returncode != 0
    assert "SECRET_KEY is insecure" in result.stderr
    short = load_settings(tmp_path, DEBUG="0", SECRET_KEY="short")
    assert "SECRET_KEY is insecure" in short.stderr


def test_production_starts_with_a_real_secret(tmp_path):
    result = load_settings(tmp_path, DEBUG="0", SECRET_KEY="k" * 64, ALLOWED_HOSTS="portal.example")
    assert result.returncode == 0, result.stderr


def test_bad_booleans_are_refused_by_name(tmp_path):
    result = load_settings(tmp_path, DEBUG="maybe")
    assert result.returncode != 0
    assert "DEBUG must be a boolean" in result.stderr


def test_s3_is_switched_on_by_its_bucket_variable(tmp_path):
    result = load_settings(tmp_path, ASIBENCH_S3_BUCKET="asibench-private")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[2] == "storages.backends.s3.S3Storage"


def test_docker_compose_passes_only_variables_the_code_reads():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    settings_source = (REPO / "config" / "settings.py").read_text()
    sandbox_sources = " ".join(p.read_text() for p in (REPO / "scoring").rglob("*.py"))
    env_example = (REPO / ".env.example").read_text()
    for service in ("web", "worker"):
        environment = compose["services"][service]["environment"]
        assert environment, service
        for name in environment:
            read = re.search(rf"[\"']{re.escape(name)}[\"']", settings_source + sandbox_sources)
            assert read, f"docker-compose sets {name} for {service}, but no code reads it"
            assert name in env_example, f"{name} is missing from .env.example"
    web = compose["services"]["web"]["environment"]
    assert web["DEBUG"] == "${DEBUG:-0}"  # off unless .env asks (tests/deploy renders it)
    assert web["DATABASE_URL"].startswith("postgres://")
    assert web["CELERY_BROKER_URL"].startswith("redis://")
    assert web["ASIBENCH_S3_BUCKET"]


def deploy_check(tmp_path: Path, **env: str | None) -> subprocess.CompletedProcess:
    # The browser fixture sets DJANGO_ALLOW_ASYNC_UNSAFE in this process; a deployment never has it.
    overridden = {"SECRET_KEY", "DEBUG", "DATABASE_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND", "CACHE_URL",
                  "DJANGO_ALLOW_ASYNC_UNSAFE"}
    clean = {k: v for k, v in os.environ.items() if k not in overridden and not k.startswith("ASIBENCH_S3")}
    clean.update(ASIBENCH_VAR_DIR=str(tmp_path), SECRET_KEY=secrets.token_urlsafe(60), ALLOWED_HOSTS="portal.example",
                 ASIBENCH_PUBLIC_URL="https://portal.example")
    clean.update(env)
    clean = {k: v for k, v in clean.items() if v is not None}
    return subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
                          cwd=REPO, env=clean, capture_output=True, text=True)


def test_production_behind_a_tls_proxy_passes_the_deploy_check(tmp_path):
    result = deploy_check(tmp_path, DEBUG="0", BEHIND_TLS_PROXY="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_deploy_check_still_catches_an_insecure_override(tmp_path):
    result = deploy_check(tmp_path, DEBUG="0", BEHIND_TLS_PROXY="1", SESSION_COOKIE_SECURE="0")
    assert result.returncode != 0
    assert "security.W012" in result.stderr


def test_the_deploy_check_warns_when_production_does_not_say_where_it_is(tmp_path):
    result = deploy_check(tmp_path, DEBUG="0", BEHIND_TLS_PROXY="1", ASIBENCH_PUBLIC_URL=None)
    assert result.returncode != 0
    assert "portal.W001" in result.stderr and "ASIBENCH_PUBLIC_URL is not set" in result.stderr


def test_the_public_url_must_be_an_absolute_http_url(tmp_path):
    for bad in ("asibench.example", "ftp://asibench.example", "https://asibench.example/?x=1"):
        result = load_settings(tmp_path, ASIBENCH_PUBLIC_URL=bad)
        assert result.returncode != 0
        assert "ASIBENCH_PUBLIC_URL must be an absolute http(s) URL" in result.stderr and repr(bad) in result.stderr
    # A public address is for a deployment (DEBUG on refuses a non-loopback one: test_debug_loopback_only).
    assert load_settings(tmp_path, ASIBENCH_PUBLIC_URL="https://asibench.example/", DEBUG="0",
                         SECRET_KEY="k" * 50, ALLOWED_HOSTS="asibench.example").returncode == 0


def test_docker_compose_defaults_are_production_safe():
    web = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["web"]["environment"]
    assert web["DEBUG"] == "${DEBUG:-0}"  # off unless .env asks (tests/deploy renders it)
    for name in ("BEHIND_TLS_PROXY", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_SSL_REDIRECT"):
        assert web[name].endswith(":-1}"), f"{name} must default to on in docker-compose: {web[name]}"
    assert web["NUM_PROXIES"].endswith(":-1}")
