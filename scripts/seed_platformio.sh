#!/usr/bin/env bash
# Seed a PlatformIO core directory so that `pio run` works with no network.
#
# PlatformIO runs every build through its own SCons package ($PLATFORMIO_CORE_DIR/packages/
# tool-scons) and tries to download it when it is missing (about a minute of retries, then a
# failure, on a machine that cannot reach the PlatformIO registry).  The pip `scons==4.11.1`
# is the same SCons, so we lay it out the way PlatformIO's package manager expects: the
# `SCons/` package, a `scons.py` launcher, a `package.json` whose version satisfies the core's
# requirement (~4.41101.0) and a `.piopm` naming the owner `platformio`.
#
# Usage: scripts/seed_platformio.sh [CORE_DIR]   (default: $PLATFORMIO_CORE_DIR, else ~/.platformio)
# Idempotent: a seeded directory is left alone unless its SCons differs from the pip one.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
core=${1:-${PLATFORMIO_CORE_DIR:-$HOME/.platformio}}
py=${PYTHON:-}
if [ -z "$py" ]; then
  if [ -x "$root/.venv/bin/python" ]; then py="$root/.venv/bin/python"; else py=python3; fi
fi
pkg="$core/packages/tool-scons"
version="4.41101.0"

src=$("$py" - <<'PY'
import sys
try:
    import SCons
except ImportError:
    sys.exit("seed_platformio: SCons is not installed in this Python; run: "
             f"{sys.executable} -m pip install scons==4.11.1")
from pathlib import Path
print(Path(SCons.__file__).resolve().parent)
PY
)
scons_version=$("$py" -c 'import SCons; print(SCons.__version__)')
if [ "$scons_version" != "4.11.1" ]; then
  echo "seed_platformio: found SCons $scons_version in $py, need 4.11.1 (pip install scons==4.11.1)" >&2
  exit 1
fi

if [ -f "$pkg/package.json" ] && [ -f "$pkg/.piopm" ] && [ -f "$pkg/SCons/.seeded-from" ] \
   && [ "$(cat "$pkg/SCons/.seeded-from")" = "$src $scons_version" ]; then
  exit 0
fi

tmp="$pkg.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
cp -R "$src" "$tmp/SCons"
find "$tmp/SCons" -name __pycache__ -prune -exec rm -rf {} +
echo "$src $scons_version" > "$tmp/SCons/.seeded-from"

cat > "$tmp/scons.py" <<'PY'
"""SCons launcher for PlatformIO: run the SCons package that sits next to this file."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import SCons.Script  # noqa: E402

if __name__ == "__main__":
    SCons.Script.main()
PY

cat > "$tmp/package.json" <<JSON
{
  "name": "tool-scons",
  "version": "$version",
  "description": "SCons $scons_version, seeded from the pip package by executorch-espnn",
  "keywords": ["build tool"],
  "license": "MIT"
}
JSON

cat > "$tmp/.piopm" <<JSON
{"type": "tool", "name": "tool-scons", "version": "$version", "spec": {"owner": "platformio", "id": null, "name": "tool-scons", "requirements": null, "uri": null}}
JSON

rm -rf "$pkg"
mkdir -p "$(dirname "$pkg")"
mv "$tmp" "$pkg"
echo "seed_platformio: seeded $pkg from $src" >&2
