"""The classic-protocol tests reuse the consumer tests' ledger, members and feeders (tests/consumer)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "consumer"))

from consumer_harness import feeders, members

__all__ = ["feeders", "members"]
