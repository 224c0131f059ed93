"""Differences between Spark versions in the Python data source API.

Spark 4.2 added read limits for Python streaming sources (``latestOffset(start, limit)``,
``getDefaultReadLimit``, `ReadMaxRows`, ...) and `SupportsTriggerAvailableNow`. On Spark 4.0 and
4.1 these names do not exist: stand-ins with the same shape are defined here, Spark calls
``latestOffset()`` without arguments, and the source applies ``maxRecordsPerTrigger`` itself when
it plans a batch.
"""

from __future__ import annotations

from dataclasses import dataclass

try:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        ReadMinRows,
        SupportsTriggerAvailableNow,
    )

    #: Whether Spark passes read limits to Python streaming sources.
    HAS_READ_LIMITS = True
except ImportError:  # pragma: no cover - Spark 4.0 / 4.1
    HAS_READ_LIMITS = False

    class ReadLimit:  # type: ignore[no-redef]
        """Stand-in for Spark 4.2's ReadLimit."""

    @dataclass
    class ReadAllAvailable(ReadLimit):  # type: ignore[no-redef]
        """Stand-in: no limit."""

    @dataclass
    class ReadMaxRows(ReadLimit):  # type: ignore[no-redef]
        """Stand-in: at most `max_rows` records."""

        max_rows: int

    @dataclass
    class ReadMinRows(ReadLimit):  # type: ignore[no-redef]
        """Stand-in: at least `min_rows` records, or no batch."""

        min_rows: int

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in mixin (Spark 4.0/4.1 run Trigger.AvailableNow through their own wrapper)."""


__all__ = [
    "HAS_READ_LIMITS",
    "ReadAllAvailable",
    "ReadLimit",
    "ReadMaxRows",
    "ReadMinRows",
    "SupportsTriggerAvailableNow",
]
