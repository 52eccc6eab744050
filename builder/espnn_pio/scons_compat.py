"""Keep SCons's "no command string given" sentinel one object across copies.

In SCons 4.11 (what PlatformIO 6.2 asks for, `tool-scons` ~4.41101.0, and what
scripts/seed_platformio.sh lays out) the sentinel `_null` is an instance of `_Null`, which
`copy.deepcopy` duplicates (a class it would return unchanged).  Arduino-ESP32 2.0.x's
tools/platformio-build.py deep-copies espressif32's `ElfToBin` action to add
`--elf-sha256-offset`: the copy's `cmdstr` becomes a second `_Null` that `cmdstr is not _null`
no longer recognises, SCons prints it as the command line, and every `pio run -v` of an ESP
board dies with "unsupported operand type(s) for +: '_Null' and 'str'" in
`SCons/Action.py print_cmd_line` (reproduced with the real espressif32 6.13.0 and
Arduino-ESP32 2.0.14, tests/test_real_builders.py).  Copying the sentinel now returns it.
"""

from __future__ import annotations

from typing import Any


def keep_sentinel_on_copy() -> bool:
    """Make copy/deepcopy of SCons's `_null` return it; False when this SCons has none (then
    nothing needs it)."""
    try:
        from SCons.Util import sctypes
    except ImportError:  # an SCons older than its Util package: `_null` was the class
        return False
    null_type = getattr(sctypes, "_Null", None)
    if not isinstance(getattr(sctypes, "_null", None), type) and null_type is not None:
        def same(self: Any, memo: Any = None) -> Any:
            return self

        null_type.__copy__ = same
        null_type.__deepcopy__ = same
        return True
    return False
