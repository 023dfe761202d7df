#!/usr/bin/env bash
# Installs the Debian packages the Portal runs on: bubblewrap (the scoring sandbox), the tools of the
# many-hosts tests (iproute2, postgresql, redis-server) and, for the browser tests, chromium.
# Needs root; otherwise says exactly what is missing.
set -euo pipefail
need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
# The many-hosts tests (tests/scaleout): network namespaces and veth pairs (ip), and their own
# PostgreSQL cluster and Redis server on the services host.
command -v ip >/dev/null 2>&1 || need+=(iproute2)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
if [ "${ASIBENCH_SKIP_BROWSER:-}" = "" ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "Missing Debian packages: ${need[*]}. Install them with: sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
echo "Installing ${need[*]} ..."
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
