"""Every image the deployment pulls is one exact release: in docker-compose.yml and in every Dockerfile
(each `FROM`, and the default of an `ARG` a `FROM` names). A tag that moves (`latest`, `16`, `3.11-slim`)
changes what an operator runs under them; these tests fail on one."""

import re
from pathlib import Path

import pytest
import yaml

from tests.support import REPO

# How each image we pull numbers an exact release. A repository not listed here fails the test until its
# scheme is added: guessing would let a moving tag through. An `@sha256:` digest may follow any of them.
EXACT_TAGS = {
    "postgres": r"\d+\.\d+-bookworm",  # PostgreSQL releases are MAJOR.MINOR (16.11); "16" moves
    "redis": r"\d+\.\d+\.\d+-bookworm",
    "python": r"\d+\.\d+\.\d+-slim-bookworm",
    "chrislusf/seaweedfs": r"\d+\.\d+",  # SeaweedFS releases are MAJOR.MINOR (4.47); there is no "4"
    "prom/prometheus": r"v\d+\.\d+\.\d+",
}


def mutable_reason(reference: str) -> str | None:
    """Why `reference` may change under the operator, or None for one exact release."""
    ref, _, digest = reference.partition("@")
    if digest and not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        return f"{reference}: {digest!r} is not a sha256 digest"
    name, _, tag = ref.rpartition(":") if ":" in ref.rsplit("/", 1)[-1] else (ref, "", "")
    name = re.sub(r"^(docker\.io/)?(library/)?", "", name)
    if name not in EXACT_TAGS:
        return f"{reference}: no known release scheme for {name!r} (add it to EXACT_TAGS)"
    if not tag:
        return f"{reference}: no tag (means latest)"
    if not re.fullmatch(EXACT_TAGS[name], tag):
        return f"{reference}: {tag!r} is not one exact release of {name}"
    return None


def compose_images() -> list[str]:
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    pulled = []
    for name, service in services.items():
        if "image" not in service:
            assert "build" in service, name
            continue
        if "build" in service:
            # Our own build, tagged locally; `pull_policy: build` keeps compose from pulling the tag.
            assert service.get("pull_policy") == "build", f"{name} builds {service['image']} but may pull it"
            continue
        pulled.append(service["image"])
    return pulled


def dockerfile_images(path: Path) -> list[str]:
    args: dict[str, str] = {}
    images = []
    for line in path.read_text().splitlines():
        words = line.split()
        if len(words) >= 2 and words[0].upper() == "ARG" and "=" in words[1]:
            key, value = words[1].split("=", 1)
            args[key] = value
        elif len(words) >= 2 and words[0].upper() == "FROM":
            reference = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), words[1])
            assert "$" not in reference, f"{path.name}: {words[1]} has no default"
            images.append(reference)
    return images


def test_compose_pulls_only_exact_releases():
    images = compose_images()
    assert len(images) == 4, images  # postgres, redis, seaweedfs, prometheus
    assert [reason for image in images if (reason := mutable_reason(image))] == []


@pytest.mark.parametrize("dockerfile", sorted((REPO / "docker").glob("*Dockerfile")), ids=lambda p: p.name)
def test_every_dockerfile_starts_from_an_exact_release(dockerfile):
    images = dockerfile_images(dockerfile)
    assert images
    assert [reason for image in images if (reason := mutable_reason(image))] == []


def test_the_web_and_scoring_images_share_one_python():
    web, scoring = (dockerfile_images(REPO / "docker" / name) for name in ("Dockerfile", "scoring.Dockerfile"))
    assert web == scoring


@pytest.mark.parametrize("reference", [
    "minio/minio:latest", "postgres:16", "postgres", "redis:7", "python:3.11-slim", "python:3.11-slim-bookworm",
    "chrislusf/seaweedfs:latest", "chrislusf/seaweedfs:4", "prom/prometheus:v3", "postgres:16-bookworm",
    "docker.io/library/postgres:16", "nginx:1.27.3", "postgres:16.11-bookworm@sha256:abc",
])
def test_a_moving_or_unknown_tag_is_caught(reference):
    assert mutable_reason(reference)


@pytest.mark.parametrize("reference", [
    "postgres:16.11-bookworm", "redis:7.4.7-bookworm", "python:3.11.14-slim-bookworm", "chrislusf/seaweedfs:4.47",
    "docker.io/chrislusf/seaweedfs:4.47", "prom/prometheus:v3.5.0", "docker.io/library/postgres:16.11-bookworm",
    "postgres:16.11-bookworm@sha256:" + "0" * 64,
])
def test_an_exact_release_passes(reference):
    assert mutable_reason(reference) is None
