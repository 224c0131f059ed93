"""Which offsets of a partition the simulated application has processed."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Coverage:
    """Processed offsets of one partition, as disjoint sorted [start, end) intervals."""

    intervals: list[list[int]] = field(default_factory=list)

    def add(self, start: int, end: int) -> None:
        """Mark [start, end) processed."""
        spans = self.intervals
        for i, span in enumerate(spans):
            if end < span[0]:
                spans.insert(i, [start, end])
                return
            if start <= span[1]:
                span[0] = min(span[0], start)
                span[1] = max(span[1], end)
                while i + 1 < len(spans) and spans[i + 1][0] <= span[1]:
                    span[1] = max(span[1], spans.pop(i + 1)[1])
                return
        spans.append([start, end])

    @property
    def prefix(self) -> int:
        """Every offset below this one has been processed."""
        spans = self.intervals
        return spans[0][1] if spans and spans[0][0] == 0 else 0
