"""Where the reference cluster answers differently from Apache Kafka 4.4 on purpose: one entry per
(scenario, observation label), with the reason. Everything else must be equal; an entry that no
longer differs fails the suite too (it would hide a future regression).
"""

from __future__ import annotations

INTENDED: dict[tuple[str, str], str] = {}
