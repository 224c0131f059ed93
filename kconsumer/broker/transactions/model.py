"""A transactional id's state on the transaction coordinator, and its one transition table.

States and moves are Kafka's (transactions v1):

* EMPTY: a producer id and epoch, no transaction (after InitProducerId);
* ONGOING: partitions or a group were added; the transaction's timer runs;
* PREPARE_COMMIT / PREPARE_ABORT: EndTxn (or a timeout, or a new producer fencing this one) was
  accepted and the markers are being written;
* COMPLETE_COMMIT / COMPLETE_ABORT: every marker is written; the next transaction may begin.

`TransactionRecord` is the coordinator's durable record (Kafka's ``__transaction_state``): the
whole metadata of one transactional id, replayed on failover.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace


class TxnState(enum.Enum):
    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"


#: The states each state may be entered from (Kafka's TransactionState.validPreviousStates).
TRANSITIONS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset(
        {TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}
    ),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
}

#: States in which markers are being written (a request must wait: CONCURRENT_TRANSACTIONS).
PREPARING = frozenset({TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})

TopicPartition = tuple[str, int]


class IllegalTransition(Exception):
    """A move the transition table does not allow: a bug in the coordinator, never a client error."""


@dataclass(frozen=True)
class TransactionMetadata:
    """Everything the coordinator keeps about one transactional id."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    groups: frozenset[str] = field(default_factory=frozenset)
    #: When the ongoing transaction started (-1: none) and when the metadata last changed.
    started_ms: int = -1
    updated_ms: int = -1

    def moved(self, state: TxnState, now_ms: int, **changes: object) -> TransactionMetadata:
        """This metadata in `state`, with `changes`; `IllegalTransition` if the table forbids it."""
        if self.state not in TRANSITIONS[state]:
            raise IllegalTransition(f"{self.transactional_id}: {self.state.value} -> {state.value}")
        return replace(self, state=state, updated_ms=now_ms, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class TransactionRecord:
    """The durable record of a transactional id's metadata (replayed on failover)."""

    metadata: TransactionMetadata


@dataclass(frozen=True)
class WriteMarkers:
    """Effect: write the transaction's COMMIT or ABORT marker to each of its partitions and
    complete its offsets in each of its groups, then call `TransactionCoordinator.markers_written`."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    partitions: frozenset[TopicPartition]
    groups: frozenset[str]
