"""Where a test cluster's `produce` helper puts each value: one partition when asked, otherwise the
topic's partitions in turn, continuing across calls (both `ReferenceCluster` and `ApacheKafka`)."""

from __future__ import annotations

from collections.abc import Iterable

#: What `produce` helpers take as a record value or key.
Value = bytes | bytearray | memoryview | str | None


def as_bytes(value: Value) -> bytes | None:
    """`value` as bytes (str encoded as UTF-8; None stays None: a null value or key)."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def encode_values(values: Iterable[Value]) -> list[bytes | None]:
    """Every value `as_bytes`."""
    return [as_bytes(v) for v in values]


class RoundRobin:
    """Per topic, the next partition of the turn."""

    def __init__(self) -> None:
        self._turns: dict[str, int] = {}

    def plan(self, topic: str, partitions: int, values: int, partition: int | None) -> dict[int, list[int]]:
        """partition → the positions (in the caller's list of `values`) of the values it gets."""
        by_partition: dict[int, list[int]] = {}
        for position in range(values):
            if partition is not None:
                target = partition
            else:
                turn = self._turns.get(topic, 0)
                target = turn % partitions
                self._turns[topic] = turn + 1
            by_partition.setdefault(target, []).append(position)
        return by_partition
