#!/usr/bin/env bash
# Web server and Celery worker together in the foreground; Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-8000}"
# Links in mails (also those the worker sends, with no request to take a host from) point here.
export ASIBENCH_PUBLIC_URL="${ASIBENCH_PUBLIC_URL:-http://127.0.0.1:${PORT}}"
VENV=.venv/bin

"$VENV/gunicorn" config.wsgi:application --bind "127.0.0.1:${PORT}" --workers 2 --threads 4 \
  --timeout 300 --access-logfile - &
web=$!
"$VENV/celery" -A config worker --beat --loglevel INFO --concurrency 2 -Q celery,proposals \
  --schedule "${ASIBENCH_VAR_DIR:-var}/celerybeat-schedule" &
worker=$!

stop() { kill -TERM "$web" "$worker" 2>/dev/null || true; wait "$web" "$worker" 2>/dev/null || true; }
trap 'stop; exit 0' INT TERM
echo "ASI-Bench Portal on http://127.0.0.1:${PORT}/ (mails link to ${ASIBENCH_PUBLIC_URL}; Ctrl-C stops the web server and the worker)"
wait -n "$web" "$worker"
stop
