#!/usr/bin/env bash
# The Debian packages a make target needs, installed when root; otherwise one line naming the exact
# `sudo apt-get install` command, and exit 1.
#
#   run   (`make run`, the Portal): bubblewrap, the default scoring sandbox (and the judges' sandbox);
#         and the venv module of $PYTHON (Debian ships it apart, as python3.N-venv).
#   test  (`make test`): all of that, plus the tests' own tools: iproute2 (network namespaces and veth
#         pairs of the many-hosts tests), postgresql and redis-server (their services host, and the
#         servers `make test` runs on), and chromium for the browser tests (not with ASIBENCH_SKIP_BROWSER).
#
# PostgreSQL, Redis and Chromium are never needed by `make run`: it runs on SQLite, a filesystem broker
# and no browser.
set -euo pipefail
usage="usage: $0 run|test (with PYTHON=<the interpreter .venv is made with>)"
[ $# -eq 1 ] || { echo "$usage" >&2; exit 2; }
case "$1" in
  run|test) target="$1" ;;
  *) echo "$usage" >&2; exit 2 ;;
esac

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
# Debian's own Python keeps venv's ensurepip in pythonX.Y-venv; another without it cannot make .venv.
if [ -n "${PYTHON:-}" ]; then
  venv_package="$("$PYTHON" -c 'import sys
try:
    import ensurepip, venv
except ImportError:
    print("python%d.%d-venv" % sys.version_info[:2] if sys.base_prefix == "/usr" else "-")')"
  if [ "$venv_package" = "-" ]; then
    echo "$PYTHON cannot make a virtual environment (it has no ensurepip module): name another with PYTHON=..." >&2
    exit 1
  fi
  [ -z "$venv_package" ] || need+=("$venv_package")
fi
if [ "$target" = test ]; then
  command -v ip >/dev/null 2>&1 || need+=(iproute2)
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
  command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
  if [ -z "${ASIBENCH_SKIP_BROWSER:-}" ]; then
    command -v chromium >/dev/null 2>&1 || need+=(chromium)
  fi
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "make $target needs these Debian packages: ${need[*]}. Install them with: sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
echo "Installing ${need[*]} (for make $target) ..."
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
