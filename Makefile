# The two commands a newcomer needs: `make run` and `make test`.
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PORT ?= 8000
export ASIBENCH_VAR_DIR ?= $(CURDIR)/var

# The Python .venv is made with: PYTHON if you name one (make run PYTHON=python3.12), else the oldest
# supported Python on the PATH, for `make run` and `make test` alike (scripts/find-python.sh; docs/install.md).
# Worked out once, when a recipe first needs it; check-python fails, before anything is installed, when there
# is none (the script has said why).
PYTHON ?=
BASE_PYTHON = $(eval BASE_PYTHON := $(shell PYTHON='$(PYTHON)' scripts/find-python.sh))$(BASE_PYTHON)

.PHONY: run test test-fast check-python venv deps test-deps system-deps test-system-deps services lint migrate \
	bootstrap clean

check-python:
	@test -n "$(BASE_PYTHON)"

venv: system-deps
	@scripts/ensure-venv.sh "$(BASE_PYTHON)"

deps: venv
	$(PIP) install -q -r requirements/base.txt
	$(PIP) install -q --require-hashes --no-deps -r requirements/judges.txt
	$(PIP) install -q --require-hashes --no-deps -r requirements/mfa.txt
	$(PIP) install -q --require-hashes --no-deps -r requirements/observability.txt
	$(PIP) install -q --no-deps -e .

test-deps: deps
	$(PIP) install -q -r requirements/test.txt

migrate: deps
	$(PY) manage.py migrate --noinput

bootstrap: migrate
	$(PY) manage.py bootstrap_portal
	$(PY) manage.py catalog_load

## make run: the whole system on embedded defaults (SQLite, filesystem broker, local files).
run: bootstrap
	PORT=$(PORT) scripts/run-portal.sh

## The Debian packages each needs (scripts/ensure-system-packages.sh): `make run` only bubblewrap and the
## chosen Python's venv module; `make test` also PostgreSQL, Redis, iproute2 and Chromium.
system-deps: check-python
	@PYTHON="$(BASE_PYTHON)" scripts/ensure-system-packages.sh run

test-system-deps: check-python
	@PYTHON="$(BASE_PYTHON)" scripts/ensure-system-packages.sh test

## PostgreSQL, Redis, and the container engine (podman on a Docker-API socket + the scoring image).
services: test-system-deps
	scripts/ensure-services.sh
	scripts/ensure-container-engine.sh

lint: test-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

## make test: PostgreSQL + Redis on 127.0.0.1, real Celery worker, bubblewrap, headless Chromium.
test: test-system-deps test-deps services lint
	DATABASE_URL=$${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/asibench} \
	CELERY_BROKER_URL=$${TEST_BROKER_URL:-redis://127.0.0.1:6379/15} \
	CELERY_RESULT_BACKEND=$${TEST_RESULT_BACKEND:-redis://127.0.0.1:6379/14} \
	ASIBENCH_VAR_DIR=$(CURDIR)/var/test \
	DOCKER_HOST=$${DOCKER_HOST:-unix:///run/asibench-podman.sock} \
	$(PY) -m pytest $(PYTEST_ARGS)

## make test-fast: the same, without browser and slow tests (no servers, workers, Chromium or official client).
test-fast:
	$(MAKE) test PYTEST_ARGS="-m 'not slow and not browser' $(PYTEST_ARGS)"

clean:
	rm -rf $(VENV) var
