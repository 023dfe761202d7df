#!/usr/bin/env bash
# `make run`'s servers in the foreground: the web server (gunicorn), the Celery worker and beat.
#
# Stopping: Ctrl-C, or SIGTERM/SIGINT/SIGHUP to this script or to its process group, stops all three
# within seconds: each is asked to stop (gunicorn finishes its requests, the worker its running task),
# and whatever is still there GRACE seconds later is stopped hard (the worker hands its task back to the
# queue). When one of them exits on its own (the port is taken, the database is unreadable, ...), the
# others are stopped too and this script exits non-zero.
#
# Each server runs in a process group of its own, so a signal to ours reaches only this script, which
# stops them in order: the worker's pool processes taking a group-wide TERM themselves, with beat
# embedded in the worker, left the worker hung for minutes. Beat runs on its own for the same reason.
set -uo pipefail
cd "$(dirname "$0")/.."
PORT="${PORT:-8000}"
VAR="${ASIBENCH_VAR_DIR:-var}"
GRACE=10  # seconds each server has to stop by itself
# Links in mails (also those the worker sends, with no request to take a host from) point here.
export ASIBENCH_PUBLIC_URL="${ASIBENCH_PUBLIC_URL:-http://127.0.0.1:${PORT}}"
VENV=.venv/bin

say() { echo "run-portal: $*" >&2; }

if ! [[ "$PORT" =~ ^[0-9]+$ ]] || [ "$PORT" -lt 1 ] || [ "$PORT" -gt 65535 ]; then
  say "PORT must be a port number (1-65535), not \"$PORT\"."
  exit 1
fi
# Said at once, before anything starts: gunicorn would retry for seconds, then leave a worker behind.
"$VENV/python" - "$PORT" <<'PY'
import errno, socket, sys
with socket.socket() as sock:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gunicorn binds
    try:
        sock.bind(("127.0.0.1", int(sys.argv[1])))
    except OSError as exc:
        sys.exit(3 if exc.errno == errno.EADDRINUSE else f"run-portal: cannot listen on port {sys.argv[1]}: {exc}")
PY
case $? in
  0) ;;
  3) say "port $PORT on 127.0.0.1 is already in use (another make run?). Stop that, or choose another port: make run PORT=8001"
     exit 1 ;;
  *) exit 1 ;;
esac

# A server dies with this script even when it is killed outright (SIGKILL leaves no time to stop them).
with_us=()
if command -v setpriv >/dev/null 2>&1; then with_us=(setpriv --pdeathsig TERM --); fi

requested=""
for sig in INT TERM HUP; do
  trap "requested=$sig" "$sig"
done

set -m  # job control: each background job below gets a process group of its own
"${with_us[@]}" "$VENV/gunicorn" config.wsgi:application --bind "127.0.0.1:${PORT}" --workers 2 --threads 4 \
  --timeout 300 --graceful-timeout "$GRACE" --no-control-socket --access-logfile - &
web=$!
"${with_us[@]}" "$VENV/celery" -A config worker --loglevel INFO --concurrency 2 -Q celery,proposals &
worker=$!
"${with_us[@]}" "$VENV/celery" -A config beat --loglevel INFO --schedule "$VAR/celerybeat-schedule" &
beat=$!
set +m
declare -A name=(["$web"]="the web server (gunicorn)" ["$worker"]="the Celery worker" ["$beat"]="Celery beat")
say "ASI-Bench Portal on http://127.0.0.1:${PORT}/ (mails link to ${ASIBENCH_PUBLIC_URL};" \
    "Ctrl-C stops the web server, the worker and beat)"

alive() { kill -0 "$1" 2>/dev/null; }
# True while a process is left in the group of any server named (its pool or web workers included).
any_left() {
  local pid
  for pid in "$@"; do kill -0 -- "-$pid" 2>/dev/null && return 0; done
  return 1
}
all_gone_within() {
  local seconds="$1" tick
  shift
  for ((tick = 0; tick < seconds * 5; tick++)); do
    any_left "$@" || return 0
    sleep 0.2
  done
  ! any_left "$@"
}

status=0
while [ -z "$requested" ]; do
  # Woken by a server's exit, a trapped signal, or the tick (a signal just before `wait` would not wake it).
  sleep 1 &
  tick=$!
  finished=""
  wait -n -p finished "$web" "$worker" "$beat" "$tick"
  code=$?
  if [ -n "${finished:-}" ] && [ "$finished" != "$tick" ]; then
    say "${name[$finished]} exited (status $code); stopping the others."
    status=1
    break
  fi
done

kill -TERM "$web" "$worker" "$beat" 2>/dev/null
if ! all_gone_within "$GRACE" "$web" "$worker" "$beat"; then
  # The worker's cold shutdown: its running task goes back to the queue (late acknowledgement).
  alive "$worker" && kill -QUIT "$worker" 2>/dev/null && all_gone_within 5 "$worker"
  kill -KILL -- "-$web" "-$worker" "-$beat" 2>/dev/null
fi
wait 2>/dev/null
[ -z "$requested" ] || say "stopped (SIG$requested)."
exit "$status"
