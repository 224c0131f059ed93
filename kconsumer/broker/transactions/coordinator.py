"""`TransactionCoordinator`: the reference cluster's transaction coordinator, sans-IO.

Each handler takes a request, its version and `now_ms`, and returns an `Outcome`: the response and
the markers to write (`WriteMarkers` effects). The broker writes them into the partition logs and
the groups' coordinators, then calls `markers_written`, which completes the transaction. Every
change of a transactional id's metadata is one `TransactionRecord`, kept compacted by id in
`log`; `replaying` builds a coordinator from another's log (failover) and returns the markers of
transactions caught half-way, to write again.

The rules are Kafka's for transactions v1 (the producer adds partitions with AddPartitionsToTxn,
commits offsets through AddOffsetsToTxn + TxnOffsetCommit, ends with EndTxn):

* InitProducerId with a transactional id gives a new producer id (epoch 0) the first time, then
  the next epoch, which fences the previous producer; if that producer left a transaction open,
  it is aborted (at a bumped epoch) and the caller is answered CONCURRENT_TRANSACTIONS, to retry.
* A request naming another producer id is INVALID_PRODUCER_ID_MAPPING; another epoch is
  PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2); while markers are written,
  CONCURRENT_TRANSACTIONS.
* EndTxn of an ongoing transaction prepares it; repeating the answer of a completed one is fine;
  anything else is INVALID_TXN_STATE.
* A transaction still ongoing `timeout_ms` after it began is aborted at a bumped epoch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ...errors import ErrorCode
from ...protocol.messages.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from ...protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopicResult,
    EndTxnRequest,
    EndTxnResponse,
)
from .model import PREPARING, TopicPartition, TransactionMetadata, TransactionRecord, TxnState, WriteMarkers

R = TypeVar("R")

#: Kafka's ``transaction.max.timeout.ms`` default (15 minutes).
MAX_TRANSACTION_TIMEOUT_MS = 900_000
#: The last epoch a producer id may reach before the coordinator hands out a new id.
_LAST_EPOCH = 2**15 - 2


@dataclass
class Outcome(Generic[R]):
    """A handler's response and the markers to write before the transaction completes."""

    response: R
    markers: list[WriteMarkers] = field(default_factory=list)


class TransactionCoordinator:
    """Transactional ids, their producers and transactions (see the module docstring).

    `new_producer_id` hands out cluster-wide unique producer ids (shared with idempotent producers).
    """

    def __init__(
        self, new_producer_id: Callable[[], int], max_timeout_ms: int = MAX_TRANSACTION_TIMEOUT_MS
    ) -> None:
        self._new_producer_id = new_producer_id
        self.max_timeout_ms = max_timeout_ms
        self.transactions: dict[str, TransactionMetadata] = {}
        #: The latest record of each transactional id, in the order they were written.
        self.log: dict[str, TransactionRecord] = {}

    def _write(self, metadata: TransactionMetadata) -> TransactionMetadata:
        record = TransactionRecord(metadata)
        self.log.pop(metadata.transactional_id, None)
        self.log[metadata.transactional_id] = record
        self._replay(record)
        return metadata

    def _replay(self, record: TransactionRecord) -> None:
        self.transactions[record.metadata.transactional_id] = record.metadata

    # -- requests ----------------------------------------------------------------------------

    def init_producer_id(
        self, request: InitProducerIdRequest, version: int, now_ms: int
    ) -> Outcome[InitProducerIdResponse]:
        """InitProducerId with a transactional id."""
        tid = request.transactional_id
        assert tid is not None, "InitProducerId without a transactional id is not the coordinator's"
        if not 0 < request.transaction_timeout_ms <= self.max_timeout_ms:
            return Outcome(InitProducerIdResponse(error_code=ErrorCode.INVALID_TRANSACTION_TIMEOUT))
        known = self.transactions.get(tid)
        if known is None:
            created = self._write(
                TransactionMetadata(
                    tid, self._new_producer_id(), 0, request.transaction_timeout_ms, updated_ms=now_ms
                )
            )
            return Outcome(_producer(created))
        if request.producer_id >= 0:  # KIP-360: a producer re-initialising with its own id and epoch
            if request.producer_id != known.producer_id:
                return Outcome(InitProducerIdResponse(error_code=ErrorCode.INVALID_PRODUCER_ID_MAPPING))
            if request.producer_epoch != known.producer_epoch:
                return Outcome(InitProducerIdResponse(error_code=ErrorCode.PRODUCER_FENCED))
        if known.state in PREPARING:
            return Outcome(InitProducerIdResponse(error_code=ErrorCode.CONCURRENT_TRANSACTIONS))
        if known.state == TxnState.ONGOING:  # fence the previous producer and abort its transaction
            aborting = self._write(
                known.moved(TxnState.PREPARE_ABORT, now_ms, producer_epoch=known.producer_epoch + 1)
            )
            return Outcome(
                InitProducerIdResponse(error_code=ErrorCode.CONCURRENT_TRANSACTIONS), [_markers(aborting)]
            )
        producer_id, epoch = known.producer_id, known.producer_epoch + 1
        if epoch > _LAST_EPOCH:
            producer_id, epoch = self._new_producer_id(), 0
        fresh = self._write(
            known.moved(
                TxnState.EMPTY,
                now_ms,
                producer_id=producer_id,
                producer_epoch=epoch,
                timeout_ms=request.transaction_timeout_ms,
                partitions=frozenset(),
                groups=frozenset(),
                started_ms=-1,
            )
        )
        return Outcome(_producer(fresh))

    def add_partitions(
        self,
        request: AddPartitionsToTxnRequest,
        version: int,
        now_ms: int,
        exists: Callable[[str, int], bool],
    ) -> Outcome[AddPartitionsToTxnResponse]:
        """AddPartitionsToTxn: unknown partitions fail the request (the others are
        OPERATION_NOT_ATTEMPTED), as Kafka's broker checks before asking its coordinator."""
        wanted = [(t.name, p) for t in request.topics for p in t.partitions]
        unknown = {tp for tp in wanted if not exists(*tp)}
        code: int
        if unknown:
            codes = {
                tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if tp in unknown
                else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in wanted
            }
            return Outcome(_partition_results(request, codes))
        code = self._refusal(request.transactional_id, request.producer_id, request.producer_epoch, version)
        if code == ErrorCode.NONE:
            self._begin(request.transactional_id, now_ms, partitions=frozenset(wanted))
        return Outcome(_partition_results(request, dict.fromkeys(wanted, code)))

    def add_offsets(
        self, request: AddOffsetsToTxnRequest, version: int, now_ms: int
    ) -> Outcome[AddOffsetsToTxnResponse]:
        """AddOffsetsToTxn: the group's offsets partition joins the transaction."""
        code = self._refusal(request.transactional_id, request.producer_id, request.producer_epoch, version)
        if code == ErrorCode.NONE:
            self._begin(request.transactional_id, now_ms, groups=frozenset({request.group_id}))
        return Outcome(AddOffsetsToTxnResponse(error_code=int(code)))

    def end_txn(self, request: EndTxnRequest, version: int, now_ms: int) -> Outcome[EndTxnResponse]:
        """EndTxn: prepare the commit or abort of the ongoing transaction."""
        tid, committed = request.transactional_id, request.committed
        code = self._refusal(tid, request.producer_id, request.producer_epoch, version, preparing_ok=True)
        if code != ErrorCode.NONE:
            return Outcome(EndTxnResponse(error_code=int(code)))
        known = self.transactions[tid]
        if known.state == TxnState.ONGOING:
            target = TxnState.PREPARE_COMMIT if committed else TxnState.PREPARE_ABORT
            prepared = self._write(known.moved(target, now_ms))
            return Outcome(EndTxnResponse(error_code=0), [_markers(prepared)])
        same = {
            TxnState.COMPLETE_COMMIT: (committed, ErrorCode.NONE),
            TxnState.COMPLETE_ABORT: (not committed, ErrorCode.NONE),
            TxnState.PREPARE_COMMIT: (committed, ErrorCode.CONCURRENT_TRANSACTIONS),
            TxnState.PREPARE_ABORT: (not committed, ErrorCode.CONCURRENT_TRANSACTIONS),
        }.get(known.state)
        if same is not None and same[0]:
            return Outcome(EndTxnResponse(error_code=int(same[1])))
        return Outcome(EndTxnResponse(error_code=ErrorCode.INVALID_TXN_STATE))

    def markers_written(self, transactional_id: str, now_ms: int) -> None:
        """Every marker of the prepared transaction is written: it is complete."""
        known = self.transactions[transactional_id]
        if known.state not in PREPARING:
            return
        final = (
            TxnState.COMPLETE_COMMIT if known.state == TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        )
        self._write(known.moved(final, now_ms, partitions=frozenset(), groups=frozenset(), started_ms=-1))

    # -- what the broker asks ------------------------------------------------------------------

    def produce_error(
        self, transactional_id: str, producer_id: int, epoch: int, partition: TopicPartition
    ) -> ErrorCode:
        """Why a transactional batch for `partition` must be refused (NONE: it may be appended).
        Kafka verifies that the partition was added to the producer's ongoing transaction."""
        known = self.transactions.get(transactional_id)
        if known is None or known.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if epoch < known.producer_epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if known.state != TxnState.ONGOING or partition not in known.partitions:
            return ErrorCode.INVALID_TXN_STATE
        return ErrorCode.NONE

    # -- timers ------------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """When the oldest ongoing transaction times out (None: none is ongoing)."""
        deadlines = [
            t.started_ms + t.timeout_ms for t in self.transactions.values() if t.state == TxnState.ONGOING
        ]
        return min(deadlines, default=None)

    def poll(self, now_ms: int) -> list[WriteMarkers]:
        """Abort every transaction ongoing for longer than its timeout, at a bumped epoch (the
        producer is fenced: its EndTxn is refused, its next InitProducerId starts afresh)."""
        markers = []
        for known in list(self.transactions.values()):
            if known.state == TxnState.ONGOING and known.started_ms + known.timeout_ms <= now_ms:
                aborting = self._write(
                    known.moved(TxnState.PREPARE_ABORT, now_ms, producer_epoch=known.producer_epoch + 1)
                )
                markers.append(_markers(aborting))
        return markers

    # -- failover ----------------------------------------------------------------------------

    @classmethod
    def replaying(
        cls,
        records: Iterable[TransactionRecord],
        new_producer_id: Callable[[], int],
        max_timeout_ms: int = MAX_TRANSACTION_TIMEOUT_MS,
    ) -> tuple[TransactionCoordinator, list[WriteMarkers]]:
        """A coordinator loaded from another's log, and the markers of the transactions it left
        prepared but not complete (the new coordinator writes them again)."""
        coordinator = cls(new_producer_id, max_timeout_ms)
        for record in records:
            coordinator.log[record.metadata.transactional_id] = record
            coordinator._replay(record)
        pending = [_markers(t) for t in coordinator.transactions.values() if t.state in PREPARING]
        return coordinator, pending

    # -- helpers -------------------------------------------------------------------------------

    def _refusal(
        self, tid: str, producer_id: int, epoch: int, version: int, *, preparing_ok: bool = False
    ) -> ErrorCode:
        known = self.transactions.get(tid)
        if known is None or known.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if epoch != known.producer_epoch:
            return ErrorCode.PRODUCER_FENCED if version >= 2 else ErrorCode.INVALID_PRODUCER_EPOCH
        if known.state in PREPARING and not preparing_ok:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return ErrorCode.NONE

    def _begin(
        self,
        tid: str,
        now_ms: int,
        partitions: frozenset[TopicPartition] = frozenset(),
        groups: frozenset[str] = frozenset(),
    ) -> None:
        known = self.transactions[tid]
        if known.state == TxnState.ONGOING and partitions <= known.partitions and groups <= known.groups:
            return
        started = known.started_ms if known.state == TxnState.ONGOING else now_ms
        self._write(
            known.moved(
                TxnState.ONGOING,
                now_ms,
                partitions=known.partitions | partitions,
                groups=known.groups | groups,
                started_ms=started,
            )
        )


def _producer(metadata: TransactionMetadata) -> InitProducerIdResponse:
    return InitProducerIdResponse(
        error_code=0, producer_id=metadata.producer_id, producer_epoch=metadata.producer_epoch
    )


def _markers(metadata: TransactionMetadata) -> WriteMarkers:
    return WriteMarkers(
        metadata.transactional_id,
        metadata.producer_id,
        metadata.producer_epoch,
        metadata.state == TxnState.PREPARE_COMMIT,
        metadata.partitions,
        metadata.groups,
    )


def _partition_results(
    request: AddPartitionsToTxnRequest, codes: dict[TopicPartition, ErrorCode]
) -> AddPartitionsToTxnResponse:
    return AddPartitionsToTxnResponse(
        results_by_topic=[
            AddPartitionsToTxnTopicResult(
                name=topic.name,
                results_by_partition=[
                    AddPartitionsToTxnPartitionResult(
                        partition_index=p, partition_error_code=int(codes[(topic.name, p)])
                    )
                    for p in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    )
