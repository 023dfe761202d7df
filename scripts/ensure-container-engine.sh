#!/usr/bin/env bash
# Makes a Docker-compatible container engine answer on $ASIBENCH_ENGINE_SOCKET and makes sure
# the scoring image exists, for the `docker` sandbox backend and `asibench run --sandbox os`.
#
# On these Debian 12 VMs that engine is podman 4.3 serving the Docker API on a unix socket
# (the docker Python SDK talks to it with DOCKER_HOST=unix://...). No registry is reachable,
# so the image is built from scratch: debootstrap a minimal Debian, add the pinned numeric
# stack from PyPI, `podman import` it as the base, then build docker/scoring.Dockerfile on it.
#
# Idempotent and safe to run concurrently: every step checks before it acts, under one lock.
# Slow only the first time (about two minutes for the base image); later runs take seconds.
set -euo pipefail

SOCKET="${ASIBENCH_ENGINE_SOCKET:-/run/asibench-podman.sock}"
IMAGE="${ASIBENCH_SANDBOX_IMAGE:-asibench-scoring:1.0.0}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# The scientific stack the sandbox carries; the base image's tag names these pins, so changing
# one builds a new base instead of leaving the Dockerfile to reach a registry.
SCORING_PINS_RE='^(numpy|scipy|pandas|matplotlib|pillow|PyYAML|click|rich|requests)=='
# The whole of base.txt, transitive pins included: they are the pip constraints of that build.
pins_tag="$(sha256sum < "$ROOT/requirements/base.txt" | cut -c1-12)"
BASE_IMAGE="${ASIBENCH_SANDBOX_BASE_IMAGE:-localhost/asibench-scoring-base:bookworm-$pins_tag}"
LOG_DIR="${ASIBENCH_ENGINE_LOG_DIR:-/var/log/asibench}"
# Any pip works for fetching the wheels; the project's venv (made by `make test-deps`) has one.
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON=python3; fi
fi

say() { echo "container engine: $*"; }

if [ "$(id -u)" -ne 0 ]; then
  if curl -fsS --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1; then
    say "not root; using the engine already on $SOCKET (not checking the image)"
    exit 0
  fi
  echo "The container engine is not running on $SOCKET and setting it up needs root:" \
       "sudo $0" >&2
  exit 1
fi

exec 9>/run/asibench-container-engine.lock
flock 9

# 1. Packages.
need=()
for pkg in podman runc catatonit debootstrap; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} ..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# 2. Engine configuration. The VM lacks CAP_SYS_RESOURCE (podman's default nofile/nproc
# ulimits cannot be raised past the current hard limits) and runs hybrid cgroups (v1
# controllers, no systemd): runc with the cgroupfs manager and file-based events work.
conf=/etc/containers/containers.conf
want_conf='# Written by asibench scripts/ensure-container-engine.sh.
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"'
if [ "$(cat "$conf" 2>/dev/null)" != "$want_conf" ]; then
  say "writing $conf"
  mkdir -p /etc/containers
  printf '%s\n' "$want_conf" > "$conf"
fi

# 3. The Docker-API service. --time=0: never exit for idleness.
if ! curl -fsS --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1; then
  say "starting podman system service on $SOCKET"
  mkdir -p "$LOG_DIR"
  rm -f "$SOCKET"
  # Started from the log dir: conmon leaves files (`oom` after a memory kill) in the service's cwd.
  (cd "$LOG_DIR" && exec setsid nohup podman system service --time=0 "unix://$SOCKET" \
    >>"$LOG_DIR/podman-service.log" 2>&1 < /dev/null 9>&-) &  # 9>&-: not our lock
  for _ in $(seq 1 50); do
    curl -fsS --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1 && break
    sleep 0.2
  done
  if ! curl -fsS --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1; then
    echo "podman system service did not answer on $SOCKET; see $LOG_DIR/podman-service.log" >&2
    exit 1
  fi
  chmod 0660 "$SOCKET"  # root only: the socket is root on this host
fi

# 4. The base image: Debian minbase + python3 + the pinned numeric stack (same versions as
# the service, so scores do not depend on the backend).
apt_mirror() {
  # The Debian archive this machine already uses (deb822 .sources or one-line .list).
  cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null \
    | grep -E '^\s*(URIs:|deb\s)' | grep -oE 'https?://[^ ]+' | grep -E '/debian/?$' | head -n1 || true
}
if ! podman image exists "$BASE_IMAGE"; then
  mirror="$(apt_mirror)"
  [ -n "$mirror" ] || { echo "no Debian mirror found in /etc/apt/sources.list*" >&2; exit 1; }
  work="$(mktemp -d /var/tmp/asibench-rootfs.XXXXXX)"
  trap 'rm -rf "$work"' EXIT
  say "building $BASE_IMAGE with debootstrap from $mirror (takes a minute or two) ..."
  debootstrap --variant=minbase --include=python3,python-is-python3 \
    bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  grep -E "$SCORING_PINS_RE" "$ROOT/requirements/base.txt" > "$work/pins.txt"
  sed -E 's/\[[^]]*\]//' "$ROOT/requirements/base.txt" > "$work/constraints.txt"  # pip: no extras here
  "$PYTHON" -m pip install -q --disable-pip-version-check --no-compile \
    --target "$work/rootfs/usr/local/lib/python3.11/dist-packages" \
    --only-binary=:all: --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 \
    --python-version 3.11 --implementation cp \
    -r "$work/pins.txt" -c "$work/constraints.txt"
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"* \
         "$work/rootfs/usr/local/lib/python3.11/dist-packages/bin"
  tar -C "$work/rootfs" -c . | podman import -q \
    --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'CMD ["python"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$work"
  trap - EXIT
fi

# 5. The scoring image: the base + `scoring/` + `contracts/` + `cli_client/` (docker/scoring.Dockerfile).
# Rebuilt whenever those sources change, so tests always score with the code under test.
source_hash="$(cd "$ROOT" && find docker/scoring.Dockerfile requirements/base.txt scoring contracts cli_client \
  -type f -name '*' ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | sort -z \
  | xargs -0 sha256sum | sha256sum | cut -c1-16)"
have="$(podman image inspect --format '{{index .Labels "org.asibench.source"}}' "$IMAGE" 2>/dev/null || true)"
if [ "$have" != "$source_hash" ]; then
  say "building $IMAGE (sources $source_hash) ..."
  podman build -q --network=none --pull=never \
    --build-arg "BASE_IMAGE=$BASE_IMAGE" --label "org.asibench.source=$source_hash" \
    -f "$ROOT/docker/scoring.Dockerfile" -t "$IMAGE" "$ROOT" >/dev/null
  podman image prune -f >/dev/null 2>&1 || true  # the previous build, now untagged
fi
say "ready on unix://$SOCKET with image $IMAGE"
