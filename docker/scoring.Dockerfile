# The scoring sandbox image used by the `docker` backend (ASIBENCH_SANDBOX_IMAGE).
# Build from the repository root:
#   docker build -f docker/scoring.Dockerfile -t asibench-scoring:1.0.0 .
# scripts/ensure-container-engine.sh builds it on podman from a debootstrapped base
# (--build-arg BASE_IMAGE=localhost/asibench-scoring-base:bookworm) where no registry is reachable.
# The backend starts it with no network, a read-only root, tmpfs /tmp, cap_drop ALL and
# no-new-privileges as uid 65534; the image supplies Python, the pinned numeric stack,
# `scoring/` (the engine), `contracts/` (what it shares with the client) and `cli_client/`
# (proposal validation runs `python -m cli_client`).
ARG BASE_IMAGE=python:3.11.14-slim-bookworm
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    OMP_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1

# Pins come from requirements/base.txt so the sandbox scores with the same versions as the
# service. A base that already has exactly these versions (the debootstrapped one) skips pip.
COPY requirements/base.txt /tmp/base.txt
RUN grep -E '^(numpy|scipy|pandas|matplotlib|pillow|PyYAML|click|rich|requests)==' /tmp/base.txt > /tmp/scoring.txt \
    && test "$(wc -l < /tmp/scoring.txt)" -eq 9 \
    && { python -c "import sys, importlib.metadata as m; \
sys.exit(any(m.version(n) != v for n, v in (l.strip().split('==') for l in open('/tmp/scoring.txt'))))" \
         2>/dev/null || { sed -E 's/\[[^]]*\]//' /tmp/base.txt > /tmp/constraints.txt \
              && pip install --no-cache-dir -r /tmp/scoring.txt -c /tmp/constraints.txt; }; } \
    && rm -f /tmp/base.txt /tmp/scoring.txt /tmp/constraints.txt

# The code lives in /opt/asibench and is found through a .pth file in site-packages, not
# PYTHONPATH: an environment variable can be overridden by whoever starts the container.
COPY scoring /opt/asibench/scoring
COPY contracts /opt/asibench/contracts
COPY cli_client /opt/asibench/cli_client
RUN find /opt/asibench -name __pycache__ -prune -exec rm -rf {} + \
    && chmod -R a+rX,go-w /opt/asibench \
    && python -c "import site; print(site.getsitepackages()[0])" | xargs -I{} sh -c 'echo /opt/asibench > {}/asibench.pth' \
    && python -c "import scoring.engine, cli_client.authoring.presubmit" \
    && python -m compileall -q -j0 /opt/asibench "$(python -c 'import site; print(site.getsitepackages()[0])')"
# ^ bytecode ahead of time: the sandbox's root is read-only, and compiling numpy/scipy on every
#   run tripled each scoring's start-up.

# nobody:nogroup, matching the uid the bwrap backend uses inside its sandbox.
USER 65534:65534
WORKDIR /tmp
CMD ["python", "-c", "import scoring.engine"]
