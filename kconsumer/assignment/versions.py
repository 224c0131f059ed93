"""Metadata version ranges of client-side assignors.

A client-side assignor reads member metadata of the versions ``[minimum, maximum]``. The same
range decides whether an assignor's own metadata is acceptable (`covers`), whether the members'
assignors of one name can work together (`VersionRange.common`: their ranges overlap), and which
member may compute (its range covers every member's metadata version; see
`kconsumer.assignment.announcements`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

#: Versions are int16 on the wire.
MAX_VERSION = 2**15 - 1


@dataclass(frozen=True)
class VersionRange:
    """Metadata versions ``minimum .. maximum``, both included.

    >>> VersionRange(0, 2).covers(1), VersionRange.common([VersionRange(0, 2), VersionRange(1, 3)])
    (True, VersionRange(minimum=1, maximum=2))
    """

    minimum: int
    maximum: int

    def covers(self, version: int) -> bool:
        """Whether `version` lies in the range."""
        return self.minimum <= version <= self.maximum

    def problem(self) -> str | None:
        """Why this is not a valid range for an assignor, or None: versions are int16, the
        minimum is at least -1 (-1: classic-protocol members' metadata) and the maximum at least 0."""
        if -1 <= self.minimum <= self.maximum <= MAX_VERSION and self.maximum >= 0:
            return None
        return (
            f"needs -1 <= minimum_version <= maximum_version <= {MAX_VERSION} and maximum_version >= 0, "
            f"got {self.minimum}..{self.maximum}"
        )

    @staticmethod
    def common(ranges: Iterable[VersionRange]) -> VersionRange | None:
        """The versions every range covers (their overlap), or None when there is none."""
        ranges = list(ranges)
        if not ranges:
            return None
        low, high = max(r.minimum for r in ranges), min(r.maximum for r in ranges)
        return VersionRange(low, high) if low <= high else None

    def __str__(self) -> str:
        return f"[{self.minimum}, {self.maximum}]"
