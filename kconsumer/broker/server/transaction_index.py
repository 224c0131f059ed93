"""What one partition knows about transactions: the open ones, the aborted ones, its last stable
offset, and the transaction markers the coordinator writes into it.

* A producer's transaction is *open* on the partition from its first transactional batch there
  until its marker; the last stable offset (LSO) is the first offset of the oldest open
  transaction, or the high watermark when none is open. A read_committed Fetch reads only below
  the LSO, and ListOffsets for the latest offset answers the LSO at isolation level 1.
* An aborted transaction is remembered as (producer id, first offset, last offset: its marker's),
  in marker order, so a Fetch can list those overlapping the records it returns; the consumer then
  drops that producer's batches from the first offset on until it reaches the marker.

Everything runs on the server's event loop thread, like the log.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from ...protocol import records as batches

if TYPE_CHECKING:
    from .log import PartitionLog


class PartitionTransactions:
    """The transaction index of one partition (see the module docstring)."""

    __slots__ = ("_aborted_first", "_aborted_last", "_aborted_producer", "open")

    def __init__(self) -> None:
        #: Producer id -> first offset of its open transaction on this partition.
        self.open: dict[int, int] = {}
        self._aborted_last: list[int] = []
        self._aborted_first: list[int] = []
        self._aborted_producer: list[int] = []

    def stable_offset(self, high_watermark: int) -> int:
        """The last stable offset."""
        if not self.open:  # every Fetch asks: no transaction open is the common case
            return high_watermark
        return min(self.open.values())

    def began(self, producer_id: int, offset: int) -> None:
        """A transactional batch of `producer_id` was appended at `offset`."""
        self.open.setdefault(producer_id, offset)

    def ended(self, producer_id: int, marker_offset: int, committed: bool) -> None:
        """The marker of `producer_id`'s transaction was appended at `marker_offset`."""
        first = self.open.pop(producer_id, None)
        if first is not None and not committed:
            self._aborted_last.append(marker_offset)
            self._aborted_first.append(first)
            self._aborted_producer.append(producer_id)

    def aborted_between(self, start: int, end: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions with records in [start, end)."""
        out = []
        index = bisect.bisect_left(self._aborted_last, start)
        for position in range(index, len(self._aborted_last)):
            if self._aborted_first[position] < end:
                out.append((self._aborted_producer[position], self._aborted_first[position]))
        return out

    def forget_before(self, log_start_offset: int) -> None:
        """Drop aborted transactions that ended before the log start (retention removed them)."""
        index = bisect.bisect_left(self._aborted_last, log_start_offset)
        if index:
            del self._aborted_last[:index], self._aborted_first[:index], self._aborted_producer[:index]


def write_marker(
    log: PartitionLog, producer_id: int, producer_epoch: int, committed: bool, timestamp_ms: int
) -> int:
    """Append a COMMIT or ABORT marker of the producer's transaction to `log`; its offset.

    The producer's epoch on the partition becomes the marker's (a fenced producer's later batches
    are refused) and its transaction is no longer open."""
    blob = bytearray(
        batches.build_control_batch(producer_id, producer_epoch, committed, timestamp_ms=timestamp_ms)
    )
    headers = batches.read_batches(blob)
    offset = log.append(blob, headers, log.leader_epoch)
    log.producers.marked(producer_id, producer_epoch)
    log.transactions.ended(producer_id, offset, committed)
    return offset
