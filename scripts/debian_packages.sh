#!/usr/bin/env bash
# Install the Debian packages of scripts/debian_packages.txt that are missing: with apt-get as
# root, or through sudo when it needs no password.  When neither can (or ESPNN_APT=never),
# stop with one message that names the missing packages and the command that installs them.
#
#   bash scripts/debian_packages.sh          # check, install what is missing
#   ESPNN_APT=never bash scripts/debian_packages.sh   # check only
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
list="$root/scripts/debian_packages.txt"

all=()
missing=()
while read -r pkg cmd _; do
  case "$pkg" in ''|'#'*) continue ;; esac
  all+=("$pkg")
  if [ -n "${cmd:-}" ]; then
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
  elif ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed"; then
    missing+=("$pkg")
  fi
done < "$list"

if [ "${1:-}" = "--list" ]; then  # the whole list, one line (for .ci/run and the docs)
  echo "${all[*]}"
  exit 0
fi
[ "${#missing[@]}" -eq 0 ] && exit 0

sudo=()
can=""
if [ "${ESPNN_APT:-}" != "never" ] && command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    can=yes
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    can=yes
    sudo=(sudo)
  fi
fi
if [ -z "$can" ]; then
  {
    echo "test setup: missing Debian packages the tests need: ${missing[*]}"
    echo "install them, then run the tests again:"
    echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}"
  } >&2
  exit 3
fi
echo "test setup: installing Debian packages: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
