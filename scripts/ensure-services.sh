#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis answer on 127.0.0.1; starts them if installed but stopped. Then the
# real S3 server the storage tests run against besides moto (scripts/ensure-test-s3.sh).
set -uo pipefail
fail=0

if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && ls /etc/postgresql >/dev/null 2>&1; then
    echo "Starting PostgreSQL ..."
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
  if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
    echo "PostgreSQL is not running on 127.0.0.1:5432 and could not be started." \
         "Install it (apt-get install postgresql) with trust auth for user postgres on 127.0.0.1." >&2
    fail=1
  fi
fi

if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "Starting Redis ..."
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/asibench.log || true
    for _ in $(seq 1 20); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.5; done
  fi
  if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    echo "Redis is not running on 127.0.0.1:6379 and could not be started (apt-get install redis-server)." >&2
    fail=1
  fi
fi
"$(dirname "$0")/ensure-test-s3.sh" || fail=1
exit $fail
