#!/usr/bin/env bash
# Makes a real S3 server answer on 127.0.0.1 for the tests that must not rely on moto alone
# (tests/deploy/real_s3.py): Ceph's RADOS Gateway (`radosgw`) from Debian's packages, on a
# one-node Ceph cluster in this machine's memory.
#
# Why a cluster: Debian 12 ships Ceph 16 (Pacific), whose radosgw has no standalone `dbstore`
# backend (that arrived in Ceph 17), so it needs RADOS under it. One monitor and one OSD on
# `memstore` (objects kept in memory, nothing on disk) start in seconds, take ~200 MB, and
# listen on 127.0.0.1 only. Cephx is off: nothing but this machine can reach it, and the S3
# layer above still signs every request (SigV4, the test user's keys below).
#
# Idempotent and safe to run concurrently (one lock): a gateway that answers is left alone;
# otherwise whatever is left of an earlier cluster is stopped and a fresh one is made (memstore
# kept nothing anyway). Needs root the first time (apt-get); afterwards as whoever ran it.
set -euo pipefail

HOST=127.0.0.1
PORT="${ASIBENCH_TEST_S3_PORT:-7480}"
MON_PORT="${ASIBENCH_TEST_S3_MON_PORT:-16789}"
DIR="${ASIBENCH_TEST_S3_DIR:-/var/lib/asibench-test-s3}"
# The tests' own user on a loopback-only server: fixed, so a test can sign requests without
# reading anything from this script (tests/deploy/real_s3.py has the same values).
ACCESS_KEY="${ASIBENCH_TEST_S3_ACCESS_KEY:-asibench-test}"
SECRET_KEY="${ASIBENCH_TEST_S3_SECRET_KEY:-asibench-test-secret}"

say() { echo "test S3: $*"; }
answers() { curl -fsS -o /dev/null -m 3 "http://$HOST:$PORT/" 2>/dev/null; }

if answers; then
  say "radosgw already answers on http://$HOST:$PORT"
  exit 0
fi

need=()
for pkg in radosgw ceph-mon ceph-osd; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "The test S3 server needs Debian packages: sudo apt-get install -y --no-install-recommends ${need[*]}" >&2
    exit 1
  fi
  say "installing ${need[*]} ..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

mkdir -p "$DIR"
exec 9>"$DIR.lock"
flock 9
if answers; then exit 0; fi

# Stop what is left of an earlier cluster: by the pid files it wrote (never by name), and only a pid
# that is still one of its daemons (after a reboot the number may belong to anything).
for pidfile in "$DIR"/run/*.pid; do
  [ -e "$pidfile" ] || continue
  pid="$(cat "$pidfile")"
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qE '^(ceph-mon|ceph-osd|radosgw) ' || continue
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
done
rm -rf "${DIR:?}"/*
mkdir -p "$DIR/run" "$DIR/log" "$DIR/mon.a" "$DIR/osd.0" "$DIR/rgw"

fsid="$(cat /proc/sys/kernel/random/uuid)"
export CEPH_CONF="$DIR/ceph.conf"
cat > "$CEPH_CONF" <<CONF
# Written by asibench scripts/ensure-test-s3.sh: a throwaway one-node cluster for tests.
[global]
fsid = $fsid
mon host = v1:$HOST:$MON_PORT
public addr = $HOST
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
osd objectstore = memstore
memstore device bytes = 4294967296
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 1
mon max pg per osd = 1000
run dir = $DIR/run
admin socket = $DIR/run/\$name.asok
pid file = $DIR/run/\$name.pid
log file = $DIR/log/\$name.log
[mon.a]
mon data = $DIR/mon.a
[osd.0]
osd data = $DIR/osd.0
[client.rgw]
rgw frontends = beast endpoint=$HOST:$PORT
rgw data = $DIR/rgw
rgw dns name = $HOST
CONF

say "starting a one-node Ceph cluster and radosgw in $DIR ..."
monmaptool --create --add a "v1:$HOST:$MON_PORT" --fsid "$fsid" "$DIR/monmap" >/dev/null
ceph-authtool --create-keyring "$DIR/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-mon --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/mon.keyring"
ceph-mon -i a 9>&-
osd_uuid="$(cat /proc/sys/kernel/random/uuid)"
timeout 60 ceph osd new "$osd_uuid" >/dev/null
ceph-osd -i 0 --mkfs --osd-uuid "$osd_uuid" 2>>"$DIR/log/mkfs.log"
ceph-osd -i 0 9>&- 2>>"$DIR/log/osd-start.log"
radosgw -n client.rgw 9>&-
for _ in $(seq 1 120); do answers && break; sleep 0.5; done
if ! answers; then
  echo "radosgw did not answer on http://$HOST:$PORT; see $DIR/log/" >&2
  exit 1
fi
timeout 60 radosgw-admin user create --uid=asibench-test --display-name="asibench tests" \
  --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null
say "radosgw (Ceph $(radosgw --version | awk '{print $3}')) answers on http://$HOST:$PORT"
