#!/usr/bin/env bash
# Makes .venv with the Python scripts/find-python.sh chose ($1), rebuilding it when it was made with
# another interpreter: a venv is bound to its interpreter, and one left from an earlier Python would
# run the tests on a version other than the one chosen.
set -euo pipefail
cd "$(dirname "$0")/.."
python="$1"
VENV="${VENV:-.venv}"
want="$(readlink -f -- "$("$python" -c 'import sys; print(sys.executable)')")"
version="$("$python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"

if [ -e "$VENV" ]; then
  have="$(readlink -f -- "$VENV/bin/python" 2>/dev/null || true)"
  if [ "$have" = "$want" ] && [ -x "$VENV/bin/pip" ]; then
    exit 0
  fi
  echo "$VENV was made with ${have:-an unknown or missing Python}; rebuilding it with $want (Python $version)."
  rm -rf -- "$VENV"
fi
echo "Creating $VENV with $want (Python $version) ..."
if ! "$python" -m venv "$VENV"; then
  rm -rf -- "$VENV"  # half-made (no pip): the next run would take it for finished
  exit 1
fi
"$VENV/bin/pip" install -q --upgrade pip
