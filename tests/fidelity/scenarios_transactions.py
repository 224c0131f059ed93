"""Wire-level scenarios of the transaction coordinator: InitProducerId with a transactional id
(epochs, fencing, a producer re-initialised while its transaction is open), AddPartitionsToTxn,
EndTxn's state rules, AddOffsetsToTxn and TxnOffsetCommit (KIP-447 member checks, offsets pending
until the marker, OffsetFetch with require_stable).

Apache Kafka writes markers asynchronously: right after EndTxn a request may be answered
CONCURRENT_TRANSACTIONS, and offsets may stay unstable for a moment; the scenarios wait for the
state to settle (`Script.until`) and observe what it settles to, never the transient answers.
"""

from __future__ import annotations

from typing import Any

from members import ScriptedMember, converge
from scenario import scenario
from script import Script

from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.offsets import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopics,
)
from kconsumer.protocol.messages.producer_ids import InitProducerIdRequest, InitProducerIdResponse
from kconsumer.protocol.messages.transactions import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
    DescribeTransactionsRequest,
    EndTxnRequest,
    ListTransactionsRequest,
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
)
from kconsumer.protocol.schema import Message

G = "txn-group"


class Producer:
    """A transactional producer's coordinator requests, for transactional id `name` of this run."""

    def __init__(self, s: Script, name: str) -> None:
        self.s, self.tid = s, s.t(name)
        self.producer_id, self.epoch = -1, -1

    def send(self, request: Message, version: int = 3) -> Any:
        return self.s.send(request, transactional_id=self.tid, version=version)

    def settled(self, request: Message) -> Any:
        """`request`, sent again while it is answered CONCURRENT_TRANSACTIONS (Kafka writes the
        previous transaction's markers asynchronously)."""

        def answered() -> Any:
            answer = self.send(request)
            busy = ErrorCode.CONCURRENT_TRANSACTIONS in _codes(self.s.plain(answer))
            return None if busy else answer

        return self.s.until(f"{type(request).__name__} to settle", answered)

    def init(self, label: str | None = None) -> InitProducerIdResponse:
        """InitProducerId, retried while the coordinator answers CONCURRENT_TRANSACTIONS."""

        def settled() -> Message | None:
            answer = self.send(
                InitProducerIdRequest(transactional_id=self.tid, transaction_timeout_ms=60000), 4
            )
            return None if answer.error_code == ErrorCode.CONCURRENT_TRANSACTIONS else answer

        answer = self.s.until("InitProducerId to settle", settled)
        assert isinstance(answer, InitProducerIdResponse)
        if label is not None:
            self.s.observe(label, answer)
        if answer.error_code == 0:
            self.producer_id, self.epoch = answer.producer_id, answer.producer_epoch
        return answer

    def add(self, label: str, partitions: dict[str, list[int]], epoch: int | None = None) -> None:
        topics = [AddPartitionsToTxnTopic(name=self.s.t(t), partitions=p) for t, p in partitions.items()]
        request = AddPartitionsToTxnRequest(
            transactional_id=self.tid,
            producer_id=self.producer_id,
            producer_epoch=self.epoch if epoch is None else epoch,
            topics=topics,
        )
        self.s.observe(label, self.settled(request))

    def end(
        self, label: str, committed: bool, *, settle: bool = True, producer_id: int | None = None
    ) -> None:
        request = EndTxnRequest(
            transactional_id=self.tid,
            producer_id=self.producer_id if producer_id is None else producer_id,
            producer_epoch=self.epoch,
            committed=committed,
        )

        def answered() -> Message | None:
            answer = self.send(request)
            busy = settle and answer.error_code == ErrorCode.CONCURRENT_TRANSACTIONS
            return None if busy else answer

        self.s.observe(label, self.s.until("EndTxn to settle", answered))


@scenario()
def transactional_ids_epochs_and_fencing(s: Script) -> None:
    s.topic("t", 2)
    first = Producer(s, "tx-fence")
    first.init("a new transactional id")
    stale = first.epoch
    first.init("initialised again: the next epoch")
    first.add("the previous epoch adds partitions", {"t": [0]}, epoch=stale)
    first.add("the current epoch adds partitions", {"t": [0, 1]})
    first.add("an unknown topic among known ones", {"t": [0], "nope": [0]})
    first.init("initialised while its transaction is open (settled)")
    first.end("EndTxn after the re-initialisation", committed=True)


@scenario()
def end_txn_state_rules(s: Script) -> None:
    s.topic("t", 1)
    p = Producer(s, "tx-end")
    p.init()
    p.end("EndTxn with no transaction", committed=True)
    p.end("EndTxn naming another producer id", committed=True, producer_id=p.producer_id + 1000)
    p.add("add a partition", {"t": [0]})
    p.end("commit", committed=True)
    p.end("commit again (a retry)", committed=True)
    p.end("abort after the commit", committed=False)
    p.add("the next transaction", {"t": [0]})
    p.end("abort it", committed=False)
    p.end("commit after the abort", committed=True)


@scenario()
def describe_and_list_transactions(s: Script) -> None:
    s.topic("t", 2)
    p = Producer(s, "tx-describe")

    def describe(label: str) -> None:
        s.observe(label, p.send(DescribeTransactionsRequest(transactional_ids=[p.tid]), 0))

    never = s.t("tx-never")

    def unknown() -> Any:  # asked of its own coordinator, once that has loaded its partition
        answer = s.send(
            DescribeTransactionsRequest(transactional_ids=[never]), transactional_id=never, version=0
        )
        moving = answer.transaction_states[0].error_code in (14, 15, 16)
        return None if moving else answer

    entry = s.until("the coordinator of an unused id", unknown).transaction_states[0]
    # (its producer id and epoch are placeholders, left out: they would number the producers)
    s.observe("an unknown transactional id", (entry.error_code, entry.transaction_state))
    p.init()
    describe("initialised")
    p.add("add two partitions", {"t": [0, 1]})
    describe("ongoing")

    def listed(state: str) -> Any:
        answer = p.send(ListTransactionsRequest(state_filters=[state]), 1)
        return [t for t in s.plain(answer)["transaction_states"] if t["transactional_id"] == "tx-describe"]

    s.observe("listed as Ongoing", listed("Ongoing"))
    s.observe("listed as Empty", listed("Empty"))
    p.end("commit", committed=True)

    def completed() -> Any:
        answer = p.send(DescribeTransactionsRequest(transactional_ids=[p.tid]), 0)
        return answer if answer.transaction_states[0].transaction_state == "CompleteCommit" else None

    s.observe("committed", s.until("the commit to complete", completed))


def _txn_commit(
    p: Producer, label: str, member: ScriptedMember | None, offset: int, epoch: int | None = None
) -> None:
    request = TxnOffsetCommitRequest(
        transactional_id=p.tid,
        group_id=G,
        producer_id=p.producer_id,
        producer_epoch=p.epoch,
        generation_id=-1 if member is None else (member.epoch if epoch is None else epoch),
        member_id="" if member is None else member.member_id,
        topics=[
            TxnOffsetCommitRequestTopic(
                name=p.s.t("t"),
                partitions=[TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset)],
            )
        ],
    )
    p.s.observe(label, p.s.send(request, group=G, version=3))


def _fetch(s: Script, require_stable: bool) -> Any:
    group = OffsetFetchRequestGroup(
        group_id=G, topics=[OffsetFetchRequestTopics(topic_id=s.topic_id("t"), partition_indexes=[0])]
    )
    return s.send(OffsetFetchRequest(groups=[group], require_stable=require_stable), group=G, version=10)


def _partition(answer: Any) -> tuple[int, int]:
    found = answer.groups[0].topics[0].partitions[0]
    return found.error_code, found.committed_offset


@scenario()
def transactional_offset_commits(s: Script) -> None:
    s.topic("t", 1)
    member = ScriptedMember(s, G, "A", topics=["t"])
    member.join()
    converge(s, G, [member])
    p = Producer(s, "tx-offsets")
    p.init()
    add_offsets = AddOffsetsToTxnRequest(
        transactional_id=p.tid, producer_id=p.producer_id, producer_epoch=p.epoch, group_id=G
    )
    s.observe("AddOffsetsToTxn", p.settled(add_offsets))
    _txn_commit(p, "an unknown member", ScriptedMember(s, G, "ghost"), 7, epoch=1)
    _txn_commit(p, "a stale member epoch", member, 7, epoch=member.epoch - 1 if member.epoch > 1 else 99)
    _txn_commit(p, "the member at its epoch", member, 7)
    s.observe("fetched while pending (require_stable)", _partition(_fetch(s, True)))
    s.observe("fetched while pending", _partition(_fetch(s, False)))
    p.end("commit", committed=True)

    def stable() -> tuple[int, int] | None:
        code, offset = _partition(_fetch(s, True))
        return None if code == ErrorCode.UNSTABLE_OFFSET_COMMIT else (code, offset)

    s.observe("fetched after the commit", s.until("the offset to be stable", stable))
    s.observe("AddOffsetsToTxn again", p.settled(add_offsets))
    _txn_commit(p, "the next transaction's offset", member, 9)
    p.end("abort", committed=False)
    s.observe("fetched after the abort", s.until("the offset to be stable", stable))


def _codes(value: Any) -> set[int]:
    """Every error code in a normalised answer."""
    if isinstance(value, dict):
        found = {v for k, v in value.items() if k.endswith("error_code") and isinstance(v, int)}
        for item in value.values():
            found |= _codes(item)
        return found
    if isinstance(value, list):
        return set().union(*(_codes(item) for item in value)) if value else set()
    return set()
