"""Shared pytest configuration.  Area-specific fixtures live in tests/<area>_helpers.py."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from a checkout without an editable install
    sys.path.insert(0, str(ROOT))
