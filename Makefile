# The two commands a newcomer needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PORT ?= 8000
export ASIBENCH_VAR_DIR ?= $(CURDIR)/var

.PHONY: run test test-fast venv deps test-deps system-deps services lint migrate bootstrap clean

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

deps: $(VENV)/bin/activate
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
run: system-deps bootstrap
	PORT=$(PORT) scripts/run-portal.sh

system-deps:
	scripts/ensure-system-packages.sh

## PostgreSQL, Redis, and the container engine (podman on a Docker-API socket + the scoring image).
services:
	scripts/ensure-services.sh
	scripts/ensure-container-engine.sh

lint: test-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

## make test: PostgreSQL + Redis on 127.0.0.1, real Celery worker, bubblewrap, headless Chromium.
test: system-deps test-deps services lint
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
