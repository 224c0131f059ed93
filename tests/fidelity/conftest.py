"""The fidelity suite reuses the consumer tests' ledger and members (tests/consumer) and the
out-of-process peer member (tests/interop)."""

from __future__ import annotations

import sys
from pathlib import Path

for helpers in ("consumer", "interop"):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / helpers))
