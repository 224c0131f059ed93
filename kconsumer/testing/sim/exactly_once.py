"""Exactly-once pipelines in the simulation (``protocols="transactional"``): every member process
turns what it processes into output inside transactions, as `examples/exactly_once.py` does.

After each poll's processing, the application runs one transaction over the records it processed
since the last one (its thread is blocked meanwhile, as in ``commit_transaction``):

1. TxnOffsetCommit reaches the coordinator one network latency later, carrying the member id and
   the member epoch the core has at the time it is sent (the consumer's group metadata). The real
   `GroupCoordinator` checks them (KIP-447) and stores the offsets pending under the producer id.
2. Its answer comes back one latency later. Accepted: EndTxn(commit) reaches the coordinator
   one latency after that and the transaction completes there, even if the process died
   meanwhile: the pending offsets become committed and the batch's records enter the committed
   output. Refused, or lost to a network fault: the transaction aborts, and the application
   seeks its partitions back to their committed offsets.
3. A process that dies with an open transaction leaves it open until the next incarnation of
   its slot initialises the same transactional id (fencing it: aborted) or its timeout aborts it.
4. The markers of an ended transaction can wait for a coordinator election. Until the group's
   marker is written, the producer's next TxnOffsetCommit is answered CONCURRENT_TRANSACTIONS and
   retried, as Kafka's transaction coordinator answers the next AddOffsetsToTxn: otherwise the late
   marker would complete the next transaction's pending offsets with it.

Members fetch their committed offsets with ``require_stable`` (read_committed), so a new owner
waits for a pending transaction instead of starting below its offsets.

Invariants: an input record enters the committed output at most once (checked at every commit);
after the drain, every record of a live partition is in it; and an accepted TxnOffsetCommit comes
from the member holding each of its partitions on the coordinator.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import ErrorCode
from ...protocol.messages.transactions import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)
from .host import GROUP
from .topics import Key

if TYPE_CHECKING:
    from .app import SimApp
    from .runtime import SimMember
    from .world import World

#: How long the transaction coordinator lets a transaction stay open before aborting it.
TRANSACTION_TIMEOUT_MS = 10_000
#: The application thread waits this long for an answer before aborting (request timeout).
_ANSWER_TIMEOUT_MS = 5_000
#: TxnOffsetCommit answers a producer retries (after finding the coordinator again).
_COORDINATOR_MOVING = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE}
)
_RETRY_BACKOFF_MS = 100


@dataclass
class Transaction:
    """One application transaction: the records it covers and the offsets after them."""

    number: int
    proc: SimMember
    producer_id: int
    producer_epoch: int
    records: list[tuple[Key, int, int]]
    offsets: dict[Key, int]
    member_id: str
    member_epoch: int
    state: str = "open"  # open, offsets-accepted, committed, aborted
    refusal: str = ""


class ExactlyOnce:
    """The transactions of every member process, and the exactly-once output ledger."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.rng = random.Random(f"{world.seed}:transactions")
        #: The committed output: each input record (key, offset) -> how many times committed.
        self.output: dict[tuple[Key, int], int] = {}
        #: Each slot's producer epoch (its transactional id is stable across incarnations).
        self.epochs: dict[int, int] = {}
        self.open: dict[int, Transaction] = {}
        #: Per producer id: markers of ended transactions not written to the group yet, written
        #: one after the other in the order the transactions ended (True: commit).
        self.markers_pending: dict[int, deque[tuple[bool, str]]] = {}
        self.numbers = 0
        self.stats = {"committed": 0, "aborted": 0, "refused": 0, "fenced": 0, "timed_out": 0}

    # -- producer lifecycle -----------------------------------------------------------------------

    def init_producer(self, slot: int) -> None:
        """A new incarnation of `slot` initialises its transactional id: the next epoch, and the
        previous incarnation's open transaction is aborted."""
        self.epochs[slot] = self.epochs.get(slot, -1) + 1
        left = self.open.get(slot)
        if left is not None and left.state in ("open", "offsets-accepted"):
            self.stats["fenced"] += 1
            self._abort(left, "fenced by the next incarnation")

    # -- one transaction --------------------------------------------------------------------------

    def transact(self, app: SimApp) -> None:
        """Start a transaction over what `app` processed since the last one (if anything); the
        application thread is blocked until it ends."""
        proc = app.proc
        topics = self.world.topics
        records = [(key, start, end) for key, start, end in app.txn_records if topics.is_live(key[0])]
        offsets = {key: position.offset for key, position in app.pending.items() if topics.is_live(key[0])}
        app.txn_records.clear()
        app.pending.clear()
        if not records:
            return
        core = proc.core
        self.numbers += 1
        txn = Transaction(
            self.numbers,
            proc,
            proc.slot,
            self.epochs[proc.slot],
            records,
            offsets,
            proc.group_member_id,
            core.member_epoch,
        )
        self.open[proc.slot] = txn
        app.in_transaction = True
        sched = self.world.sched
        if self.world.net.isolated(proc.slot):
            proc.deliver_after(_ANSWER_TIMEOUT_MS, self._answered, txn, None)
        else:
            sched.after(self.world.net.latency(), self._offsets_arrive, txn)
        sched.after(TRANSACTION_TIMEOUT_MS, self._timeout, txn)

    def _offsets_arrive(self, txn: Transaction) -> None:
        host = self.world.host
        by_topic: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
        # TxnOffsetCommit names topics, not ids: offsets of a topic deleted and recreated while
        # they are on their way would apply to the new topic (on Kafka too). The one race the
        # protocol cannot close is left out: they are dropped (docs/exactly-once.md).
        txn.offsets = {
            key: offset for key, offset in txn.offsets.items() if self.world.topics.is_live(key[0])
        }
        for key, offset in sorted(txn.offsets.items(), key=lambda item: (item[0][0].bytes, item[0][1])):
            name = self.world.topics.name_of(key[0])
            by_topic.setdefault(name, []).append(
                TxnOffsetCommitRequestPartition(partition_index=key[1], committed_offset=offset)
            )
        request = TxnOffsetCommitRequest(
            transactional_id=f"tx-{txn.producer_id}",
            group_id=GROUP,
            producer_id=txn.producer_id,
            producer_epoch=txn.producer_epoch,
            generation_id=txn.member_epoch,
            member_id=txn.member_id,
            topics=[
                TxnOffsetCommitRequestTopic(name=name, partitions=parts) for name, parts in by_topic.items()
            ],
        )
        if txn.state != "open":
            return  # aborted meanwhile (fenced): the coordinator refuses the old epoch
        if self.markers_pending.get(txn.producer_id):  # CONCURRENT_TRANSACTIONS: try again
            self.world.sched.after(_RETRY_BACKOFF_MS + self.world.net.latency(), self._offsets_arrive, txn)
            return
        response = host.serve(host.broker, request, 3, txn.member_id)
        assert isinstance(response, TxnOffsetCommitResponse)
        codes = {p.error_code for topic in response.topics for p in topic.partitions}
        if codes and codes <= _COORDINATOR_MOVING:  # the producer finds the coordinator, retries
            self.world.sched.after(_RETRY_BACKOFF_MS + self.world.net.latency(), self._offsets_arrive, txn)
            return
        accepted = codes == {ErrorCode.NONE}
        txn.refusal = ",".join(sorted(ErrorCode.of(c).name for c in codes if c))
        if accepted:
            txn.state = "offsets-accepted"
            self._check_owner(txn)
        self.world.sched.after(self.world.net.latency(), txn.proc.deliver, self._answered, txn, accepted)

    def _answered(self, txn: Transaction, accepted: bool | None) -> None:
        """In the member process: the TxnOffsetCommit answer (None: none came in time)."""
        if txn.state in ("committed", "aborted"):
            return
        if accepted:
            self.world.sched.after(self.world.net.latency(), self._end, txn)
            return
        self.stats["refused"] += 1
        self._abort(txn, f"offsets refused ({txn.refusal})" if accepted is False else "no answer")
        self._rewind(txn.proc.app)
        self._resume(txn.proc.app)

    def _end(self, txn: Transaction) -> None:
        """EndTxn(commit) at the coordinators (the process may have died since it sent it)."""
        if txn.state != "offsets-accepted":
            return
        if self.epochs.get(txn.producer_id) != txn.producer_epoch:
            self._abort(txn, "fenced")  # PRODUCER_FENCED: its epoch was bumped meanwhile
            return
        txn.state = "committed"
        self.stats["committed"] += 1
        self._write_markers(txn, committed=True)
        again: list[str] = []
        for key, start, end in txn.records:
            for offset in range(start, end):
                seen = self.output.get((key, offset), 0)
                if seen:
                    again.append(f"{self.world.topics.short(key)}@{offset}")
                self.output[(key, offset)] = seen + 1
        if again:
            self.world.checker.violation(
                "exactly-once",
                f"transaction {txn.number} of {txn.proc.label} committed {len(again)} records again: "
                + ", ".join(again[:5]),
            )
        self.world.trace.log(
            self.world.sched.now,
            txn.proc.label,
            f"transaction {txn.number} committed ({len(txn.records)} ranges)",
        )
        txn.proc.deliver(self._resume, txn.proc.app)

    def _timeout(self, txn: Transaction) -> None:
        if txn.state in ("open", "offsets-accepted"):
            self.stats["timed_out"] += 1
            self._abort(txn, "timed out")
            txn.proc.deliver(self._rewind, txn.proc.app)
            txn.proc.deliver(self._resume, txn.proc.app)

    def _abort(self, txn: Transaction, why: str) -> None:
        txn.state = "aborted"
        self.stats["aborted"] += 1
        self._write_markers(txn, committed=False)
        self.world.trace.log(self.world.sched.now, txn.proc.label, f"transaction {txn.number} aborted: {why}")

    def _write_markers(self, txn: Transaction, committed: bool) -> None:
        """Queue `txn`'s markers. A producer's markers are written in order: Kafka's transaction
        coordinator finishes one transaction's markers before that producer's epoch is bumped or
        its next transaction ends (an abort written first would drop a committed transaction's
        pending offsets; seed 1570134)."""
        queue = self.markers_pending.setdefault(txn.producer_id, deque())
        queue.append((committed, txn.member_id))
        if len(queue) == 1:
            self._write_next_markers(txn.producer_id)

    def _write_next_markers(self, producer: int) -> None:
        queue = self.markers_pending[producer]
        committed, member_id = queue[0]

        def written() -> None:
            queue.popleft()
            if queue:
                self._write_next_markers(producer)

        self.world.host.complete_transaction(producer, committed, member_id, written)

    def _rewind(self, app: SimApp) -> None:
        """``seek`` every fetched partition back to its committed offset (the start without one)."""
        stored = self.world.host.last.state.offsets.get(GROUP, {})
        topics = self.world.topics
        for key, fetch in app.fetching.items():
            value = stored.get((topics.name_of(key[0]), key[1]))
            fetch.position = value.offset if value is not None and value.topic_id == key[0] else 0
        app.pending.clear()
        app.txn_records.clear()

    def _resume(self, app: SimApp) -> None:
        if app.in_transaction:
            app.in_transaction = False
            app.proc.deliver_after(0, app.poll)

    # -- invariants -------------------------------------------------------------------------------

    def _check_owner(self, txn: Transaction) -> None:
        """KIP-447: offsets accepted in a transaction come from their partitions' holder."""
        host = self.world.host
        if not host.tracks_ownership:
            return
        for key in txn.offsets:
            owner = host.owner_of(key)
            if owner != txn.member_id:
                self.world.checker.violation(
                    "txn-offsets-by-non-owner",
                    f"{txn.proc.label} ({txn.member_id} e{txn.member_epoch}) had offsets of "
                    f"{self.world.topics.short(key)} accepted; its holder is {owner}",
                )

    def in_flight(self) -> bool:
        """Whether a transaction is still on its way (the drain waits for it)."""
        return any(t.state in ("open", "offsets-accepted") and t.proc.alive for t in self.open.values())

    def expected(self) -> dict[Key, int]:
        """How far each live partition's records must be in the committed output: to the end for
        the partitions the group consumes, to the committed offset for the others (a committed
        offset says every record below it was processed once)."""
        world = self.world
        topics = world.topics
        stored = world.host.last.state.offsets.get(GROUP, {})
        wanted: dict[Key, int] = {}
        for key in topics.hw:
            value = stored.get((topics.name_of(key[0]), key[1]))
            if topics.is_live(key[0]) and value is not None and value.topic_id == key[0]:
                wanted[key] = value.offset
        for keys in world.host.assignments().values():
            for key in keys:
                if topics.is_live(key[0]):
                    wanted[key] = topics.hw.get(key, 0)
        return wanted

    def missing(self) -> bool:
        """Whether some record the group consumed (see `expected`) is not in the output yet."""
        return any((key, o) not in self.output for key, high in self.expected().items() for o in range(high))

    def check_complete(self) -> None:
        """After the drain: the committed output holds every record it must (`expected`)."""
        topics = self.world.topics
        missing = []
        for key, high in self.expected().items():
            absent = [offset for offset in range(high) if (key, offset) not in self.output]
            if absent:
                missing.append(f"{topics.short(key)}: {len(absent)} records, first {absent[:3]}")
        if missing:
            self.world.checker.violation(
                "exactly-once", "records never in the committed output: " + "; ".join(missing[:5])
            )
