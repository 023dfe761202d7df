# The scoring sandbox image used by the `docker` backend (ASIBENCH_SANDBOX_IMAGE).
# Build from the repository root:
#   docker build -f docker/scoring.Dockerfile -t asibench-scoring:latest .
# The backend starts it with no network, a read-only root, tmpfs /tmp, cap_drop ALL and
# no-new-privileges; the image only has to supply Python, the numeric stack and `scoring/`.
FROM python:3.11.7-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/opt/asibench \
    OMP_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1

# Pins come from requirements/base.txt so the sandbox scores with the same versions as
# the service; only the scorer's own dependencies are installed.
COPY requirements/base.txt /tmp/base.txt
RUN grep -E '^(numpy|scipy|PyYAML)==' /tmp/base.txt > /tmp/scoring.txt \
    && test "$(wc -l < /tmp/scoring.txt)" -eq 3 \
    && pip install --no-cache-dir -r /tmp/scoring.txt \
    && rm /tmp/base.txt /tmp/scoring.txt

COPY scoring /opt/asibench/scoring
RUN chmod -R a+rX,go-w /opt/asibench

# nobody:nogroup, matching the uid the bwrap backend uses inside its sandbox.
USER 65534:65534
WORKDIR /tmp
CMD ["python", "-c", "import scoring.engine"]
