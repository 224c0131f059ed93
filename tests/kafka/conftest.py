"""The Apache Kafka tests reuse the consumer tests' helpers (tests/consumer)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "consumer"))
