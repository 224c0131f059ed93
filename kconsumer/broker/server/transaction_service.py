"""`TransactionService`: the transaction coordinator running in the broker.

It answers InitProducerId with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn and EndTxn
on the broker that coordinates the transactional id (placed like a group: the leader of the
id's hash partition; NOT_COORDINATOR elsewhere), arms the coordinator's timeout timer on the
event loop, and carries out its `WriteMarkers` effects: a COMMIT or ABORT marker appended to each
partition of the transaction, the producer's pending offsets completed in each of its groups.
Markers are written at once, on the event loop thread, before any other request is read, so a
transaction is complete by the time EndTxn is answered.

`reload` is a coordinator failover: a new `TransactionCoordinator` replays the old one's log and
writes again the markers of any transaction it finds prepared but not complete.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from ...errors import ErrorCode
from ...protocol.api import ApiKey
from ...protocol.messages.producer_ids import InitProducerIdRequest
from ...protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    DescribedTransaction,
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    DescribeTransactionsTopicData,
    EndTxnRequest,
    ListedTransaction,
    ListTransactionsRequest,
    ListTransactionsResponse,
)
from ...protocol.schema import Message
from ..transactions import Outcome, TransactionCoordinator, TxnState, WriteMarkers
from .error_responses import error_response
from .log import Topics
from .nodes import ANY_NODE, ClusterNodes
from .shards import CoordinatorShards
from .transaction_index import write_marker

logger = logging.getLogger("kconsumer.broker.server")

#: The APIs of a transaction coordinator (InitProducerId only with a transactional id).
TRANSACTION_APIS = frozenset({ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN, ApiKey.END_TXN})


class TransactionService:
    """See the module docstring."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        topics: Topics,
        nodes: ClusterNodes,
        groups: CoordinatorShards,
        new_producer_id: Callable[[], int],
    ) -> None:
        self._loop = loop
        self._topics = topics
        self._nodes = nodes
        self._groups = groups
        self._new_producer_id = new_producer_id
        self.coordinator = TransactionCoordinator(new_producer_id)
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = 0

    def now_ms(self) -> int:
        return int(self._loop.time() * 1000)

    def handle(self, request: Message, version: int, node_id: int) -> Message:
        """Answer a transaction API request that reached broker `node_id`."""
        tid = getattr(request, "transactional_id", None)
        assert isinstance(tid, str)
        if node_id != ANY_NODE and self._nodes.coordinator_of(tid) != node_id:
            return error_response(
                request,
                version,
                ErrorCode.NOT_COORDINATOR,
                f"broker {node_id} is not the coordinator of transactional id {tid!r}",
            )
        now = self.now_ms()
        coordinator = self.coordinator
        outcome: Outcome[Message]
        if isinstance(request, InitProducerIdRequest):
            outcome = coordinator.init_producer_id(request, version, now)  # type: ignore[assignment]
        elif isinstance(request, AddPartitionsToTxnRequest):
            outcome = coordinator.add_partitions(request, version, now, self._exists)  # type: ignore[assignment]
        elif isinstance(request, AddOffsetsToTxnRequest):
            outcome = coordinator.add_offsets(request, version, now)  # type: ignore[assignment]
        elif isinstance(request, EndTxnRequest):
            outcome = coordinator.end_txn(request, version, now)  # type: ignore[assignment]
        else:
            raise ValueError(f"{type(request).__name__} is not a transaction API")
        self._write(outcome.markers)
        self._arm()
        return outcome.response

    def describe_transactions(
        self, request: DescribeTransactionsRequest, node_id: int
    ) -> DescribeTransactionsResponse:
        """DescribeTransactions: each transactional id this broker coordinates, as it stands."""
        states = []
        for tid in request.transactional_ids:
            known = self.coordinator.transactions.get(tid)
            if node_id != ANY_NODE and self._nodes.coordinator_of(tid) != node_id:
                states.append(
                    DescribedTransaction(error_code=ErrorCode.NOT_COORDINATOR, transactional_id=tid)
                )
            elif known is None:
                code = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
                states.append(DescribedTransaction(error_code=code, transactional_id=tid))
            else:
                by_topic: dict[str, list[int]] = {}
                for topic, partition in sorted(known.partitions):
                    by_topic.setdefault(topic, []).append(partition)
                states.append(
                    DescribedTransaction(
                        error_code=0,
                        transactional_id=tid,
                        transaction_state=known.state.value,
                        transaction_timeout_ms=known.timeout_ms,
                        transaction_start_time_ms=self._wall_ms(known.started_ms),
                        producer_id=known.producer_id,
                        producer_epoch=known.producer_epoch,
                        topic_partitions=[
                            DescribeTransactionsTopicData(name=name, partition_indexes=parts)
                            for name, parts in by_topic.items()
                        ],
                    )
                )
        return DescribeTransactionsResponse(transaction_states=states)

    def list_transactions(self, request: ListTransactionsRequest, node_id: int) -> ListTransactionsResponse:
        """ListTransactions: the transactional ids this broker coordinates, filtered by state,
        producer id and (v1) how long their transaction has been running."""
        now = self.now_ms()
        listed = []
        for tid, known in sorted(self.coordinator.transactions.items()):
            if node_id != ANY_NODE and self._nodes.coordinator_of(tid) != node_id:
                continue
            if request.state_filters and known.state.value not in request.state_filters:
                continue
            if request.producer_id_filters and known.producer_id not in request.producer_id_filters:
                continue
            if request.duration_filter >= 0 and (
                known.started_ms < 0 or now - known.started_ms < request.duration_filter
            ):
                continue
            listed.append(
                ListedTransaction(
                    transactional_id=tid, producer_id=known.producer_id, transaction_state=known.state.value
                )
            )
        unknown = [f for f in request.state_filters if f not in {state.value for state in TxnState}]
        return ListTransactionsResponse(
            error_code=0, unknown_state_filters=unknown, transaction_states=listed
        )

    def _wall_ms(self, loop_ms: int) -> int:
        """A time of the coordinator's (event loop) clock as wall-clock milliseconds; -1 stays."""
        return -1 if loop_ms < 0 else int(time.time() * 1000) - (self.now_ms() - loop_ms)

    def produce_check(self, tid: str, producer_id: int, epoch: int, topic: str, partition: int) -> int:
        """Why a transactional batch may not be appended (NONE: it may)."""
        return self.coordinator.produce_error(tid, producer_id, epoch, (topic, partition))

    def reload(self) -> None:
        """Failover: a new coordinator replays the log and finishes half-written transactions."""
        self.coordinator, pending = TransactionCoordinator.replaying(
            list(self.coordinator.log.values()), self._new_producer_id
        )
        logger.info("transaction coordinator reloaded: %d transactional ids", len(self.coordinator.log))
        self._write(pending)
        self._arm()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # -- effects -----------------------------------------------------------------------------

    def _exists(self, topic: str, partition: int) -> bool:
        found = self._topics.get(topic)
        return found is not None and 0 <= partition < len(found.partitions)

    def _write(self, markers: list[WriteMarkers]) -> None:
        wall_ms = int(time.time() * 1000)
        for marker in markers:
            for topic, partition in sorted(marker.partitions):
                found = self._topics.get(topic)
                if found is not None and partition < len(found.partitions):
                    write_marker(
                        found.partitions[partition],
                        marker.producer_id,
                        marker.producer_epoch,
                        marker.committed,
                        wall_ms,
                    )
            for group_id in sorted(marker.groups):
                self._groups.complete_transaction(group_id, marker.producer_id, marker.committed)
            self.coordinator.markers_written(marker.transactional_id, self.now_ms())
            logger.info(
                "transaction of %r %s (%d partitions, %d groups)",
                marker.transactional_id,
                "committed" if marker.committed else "aborted",
                len(marker.partitions),
                len(marker.groups),
            )

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        deadline = self.coordinator.next_deadline()
        if deadline is not None:
            self._deadline = deadline
            self._timer = self._loop.call_at(deadline / 1000, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        try:
            self._write(self.coordinator.poll(max(self.now_ms(), self._deadline)))
        except Exception:
            logger.exception("the transaction coordinator's timer failed")
        self._arm()
