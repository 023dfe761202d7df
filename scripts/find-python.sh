#!/usr/bin/env bash
# Prints the Python that `make` builds .venv with, or says why there is none (exit 1). Installs nothing.
#
# With PYTHON set (`make run PYTHON=/usr/bin/python3.12`) that interpreter is only checked. Otherwise
# the oldest supported Python among python3 and python3.N on the PATH is chosen: the tests run on the
# oldest version we support, and `make run` takes the same one, so a single .venv serves both.
# "Supported" is pyproject.toml's requires-python, ">=3.X" with an optional ",<3.Y" (the pinned
# requirements have wheels up to 3.Y-1 only).
set -uo pipefail
ROOT="$(cd "${BASH_SOURCE[0]%/*}/.." && pwd)"

spec="$(sed -n 's/^requires-python = "\([^"]*\)"[[:space:]]*$/\1/p' "$ROOT/pyproject.toml")"
if ! [[ "$spec" =~ ^\>=([0-9]+\.[0-9]+)(,\<([0-9]+\.[0-9]+))?$ ]]; then
  echo "scripts/find-python.sh: pyproject.toml's requires-python (\"$spec\") is not \">=X.Y\" or \">=X.Y,<X.Z\"" >&2
  exit 2
fi
minimum="${BASH_REMATCH[1]}"
below="${BASH_REMATCH[3]}"
if [ -n "$below" ]; then
  IFS=. read -r major minor <<<"$below"
  wanted="Python $minimum to $major.$((minor - 1))"
else
  wanted="Python $minimum or newer"
fi
# Debian and Ubuntu name the oldest supported one's packages python3.11 and python3.11-venv.
install_hint="sudo apt-get install -y python$minimum python$minimum-venv"

# "3.11.2 /usr/bin/python3": the version and the interpreter's own path (not a pyenv shim's). Written to
# run on any Python, 2.7 included, so that an old one is reported rather than failing to parse this.
probe() {
  timeout 20 "$1" -c 'import sys; sys.stdout.write("%d.%d.%d %s\n" % (sys.version_info[:3] + (sys.executable,)))' \
    2>/dev/null | head -n 1
}

# $1 <= $2 as versions (3.11 <= 3.11.0 <= 3.11.2 < 3.12).
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]; }
supported() {
  local series
  series="$(cut -d. -f1,2 <<<"$1")"
  version_le "$minimum" "$1" && { [ -z "$below" ] || { [ "$series" != "$below" ] && version_le "$series" "$below"; }; }
}

if [ -n "${PYTHON:-}" ]; then
  found="$(command -v -- "$PYTHON" || true)"
  if [ -z "$found" ]; then
    echo "PYTHON=$PYTHON: no such command. Name a $wanted, or leave PYTHON unset." >&2
    exit 1
  fi
  read -r version executable <<<"$(probe "$found")"
  if [ -z "${version:-}" ] || [ -z "${executable:-}" ]; then
    echo "PYTHON=$PYTHON ($found) does not run as a Python interpreter." >&2
    exit 1
  fi
  if ! supported "$version"; then
    echo "PYTHON=$PYTHON is Python $version; ASI-Bench needs $wanted." \
         "Install one ($install_hint) or name another with PYTHON=..." >&2
    exit 1
  fi
  echo "$executable"
  exit 0
fi

# Every python3 and python3.N on the PATH, each file once (/bin is often /usr/bin), probed in parallel:
# pyenv's shims take a moment each.
declare -A listed=()
candidates=()
IFS=: read -r -a dirs <<<"${PATH:-}"
for dir in "${dirs[@]}"; do
  [ -n "$dir" ] || continue
  for path in "$dir"/python3 "$dir"/python3.*; do
    [[ "${path##*/}" =~ ^python3(\.[0-9]+)?$ ]] && [ -x "$path" ] && [ -f "$path" ] || continue
    real="$(readlink -f -- "$path")"
    [ -z "${listed[$real]:-}" ] || continue
    listed[$real]=1
    candidates+=("$path")
  done
done

probes="$(mktemp -d)"
trap 'rm -rf "$probes"' EXIT
for i in "${!candidates[@]}"; do
  probe "${candidates[$i]}" >"$probes/$i" &
done
wait
seen=()
for i in "${!candidates[@]}"; do
  line="$(cat "$probes/$i")"
  [ -n "$line" ] && seen+=("$line")
done

# Oldest first; among equal versions the first found (PATH order) wins.
best=""
while read -r version executable; do
  [ -n "${version:-}" ] || continue
  if supported "$version"; then best="$executable"; break; fi
done < <(printf '%s\n' "${seen[@]+"${seen[@]}"}" | sort -s -V -k1,1)

if [ -z "$best" ]; then
  if [ ${#seen[@]} -eq 0 ]; then
    what="no python3 at all"
  else
    what="only $(printf '%s\n' "${seen[@]}" | sort -u -V -k1,1 | sed 's/^\([^ ]*\) \(.*\)$/\1 (\2)/' | paste -sd, - | sed 's/,/, /g')"
  fi
  echo "ASI-Bench needs $wanted and the PATH has $what." \
       "Install one ($install_hint) or name it with PYTHON=/path/to/python3." >&2
  exit 1
fi
echo "$best"
