"""Idempotent producers on the reference cluster: producer ids handed out by InitProducerId, and
each partition's producer state, checked on Produce as Kafka's producer state manager does.

Per partition and producer id the broker keeps the producer's epoch, the last sequence number it
appended and the sequences and offsets of its last five batches. A batch of a known producer:

* with an older epoch than the partition has seen is refused, INVALID_PRODUCER_EPOCH;
* with a newer epoch must start at sequence 0 (OUT_OF_ORDER_SEQUENCE_NUMBER otherwise);
* with the same epoch that repeats one of the last five batches is a duplicate (a retry whose
  first answer was lost): it is answered with the original offset and not appended again;
* otherwise must start right after the last sequence (wrapping at 2^31 - 1), else
  OUT_OF_ORDER_SEQUENCE_NUMBER.

A producer the partition has not seen must start at sequence 0. Batches without a producer id
(-1) are not checked.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ...errors import ErrorCode
from ...protocol.records import BatchHeader

#: Batches remembered per producer for duplicate detection (Kafka: the producer's in-flight limit).
RECENT_BATCHES = 5
_MAX_SEQUENCE = 2**31 - 1


@dataclass
class _Producer:
    epoch: int
    last_sequence: int
    #: (first sequence, last sequence, base offset) of its last batches.
    recent: deque[tuple[int, int, int]] = field(default_factory=lambda: deque(maxlen=RECENT_BATCHES))


@dataclass(frozen=True)
class Verdict:
    """What to do with a batch: append it (`error` NONE, `duplicate_of` None), answer it with the
    offset it was appended at the first time (`duplicate_of`), or refuse it (`error`)."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    duplicate_of: int | None = None


APPEND = Verdict()


def _last_sequence(header: BatchHeader) -> int:
    return (header.base_sequence + header.last_offset_delta) % (_MAX_SEQUENCE + 1)


class PartitionProducers:
    """The producer state of one partition."""

    __slots__ = ("_producers",)

    def __init__(self) -> None:
        self._producers: dict[int, _Producer] = {}

    def check(self, header: BatchHeader) -> Verdict:
        """The verdict on one batch about to be appended (see the module docstring)."""
        if header.producer_id < 0:
            return APPEND
        known = self._producers.get(header.producer_id)
        first, epoch = header.base_sequence, header.producer_epoch
        if known is None or epoch > known.epoch:
            if first != 0:
                return Verdict(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"producer {header.producer_id} (epoch {epoch}) must start at sequence 0, not {first}",
                )
            return APPEND
        if epoch < known.epoch:
            return Verdict(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"epoch {epoch} of producer {header.producer_id} is older than the last seen, {known.epoch}",
            )
        last = _last_sequence(header)
        for seen_first, seen_last, offset in known.recent:
            if (seen_first, seen_last) == (first, last):
                return Verdict(duplicate_of=offset)
        if first != (known.last_sequence + 1) % (_MAX_SEQUENCE + 1):
            return Verdict(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {header.producer_id} sent sequence {first} after {known.last_sequence}",
            )
        return APPEND

    def appended(self, header: BatchHeader, base_offset: int) -> None:
        """Remember a batch `check` let through, appended at `base_offset`."""
        if header.producer_id < 0:
            return
        known = self._producers.get(header.producer_id)
        if known is None or header.producer_epoch > known.epoch:
            known = self._producers[header.producer_id] = _Producer(header.producer_epoch, -1)
        known.last_sequence = _last_sequence(header)
        known.recent.append((header.base_sequence, known.last_sequence, base_offset))

    def marked(self, producer_id: int, epoch: int) -> None:
        """A transaction marker of `producer_id` at `epoch` was appended: the partition knows
        the epoch from now on (older ones are fenced; a newer epoch's batches start at 0)."""
        known = self._producers.get(producer_id)
        if known is None or epoch > known.epoch:
            self._producers[producer_id] = _Producer(epoch, -1)


class ProducerIds:
    """Producer ids and epochs handed out by InitProducerId (one counter for the cluster)."""

    def __init__(self) -> None:
        self._next = 0
        self._epochs: dict[int, int] = {}

    def new(self) -> tuple[int, int]:
        """A fresh producer id at epoch 0."""
        producer_id, self._next = self._next, self._next + 1
        self._epochs[producer_id] = 0
        return producer_id, 0

    def bump(self, producer_id: int, epoch: int) -> tuple[ErrorCode, int, int]:
        """KIP-360: the next epoch of an idempotent producer that asks with its current one (a
        new id when the epoch would overflow); INVALID_PRODUCER_EPOCH for any other epoch."""
        current = self._epochs.get(producer_id)
        if current is None or epoch != current:
            return ErrorCode.INVALID_PRODUCER_EPOCH, -1, -1
        if current >= 2**15 - 2:
            new_id, new_epoch = self.new()
            return ErrorCode.NONE, new_id, new_epoch
        self._epochs[producer_id] = current + 1
        return ErrorCode.NONE, producer_id, current + 1
