"""Wire-level scenarios of offsets: OffsetCommit and OffsetFetch by topic id (v10) and by name
(v9), the member epoch rules, OffsetDelete, and ListOffsets."""

from __future__ import annotations

import time

from members import ScriptedMember, converge
from scenario import scenario
from script import Script

from kconsumer.protocol.messages.list_offsets import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from kconsumer.protocol.uuid import Uuid

G = "offsets-group"


def commit(
    s: Script,
    label: str,
    offsets: dict[tuple[str, int], int],
    *,
    member: ScriptedMember | None = None,
    epoch: int | None = None,
    version: int = 10,
    by_id: dict[str, Uuid] | None = None,
) -> None:
    topics: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata="m"
            )
        )
    ids = by_id or {}
    request = OffsetCommitRequest(
        group_id=G,
        generation_id_or_member_epoch=(member.epoch if epoch is None else epoch) if member else -1,
        member_id=member.member_id if member else "",
        topics=[
            OffsetCommitRequestTopic(
                name=s.t(t) if version < 10 else "",
                topic_id=ids.get(t) or s.topic_id(t) if version >= 10 else Uuid.from_int(0),
                partitions=p,
            )
            for t, p in topics.items()
        ],
    )
    s.call(label, request, group=G, version=version)


def fetch(
    s: Script,
    label: str,
    topics: dict[str, list[int]] | None,
    *,
    member: ScriptedMember | None = None,
    epoch: int | None = None,
    version: int = 10,
    require_stable: bool = False,
) -> None:
    wanted = None
    if topics is not None:
        wanted = [
            OffsetFetchRequestTopics(
                name=s.t(t) if version < 10 else "",
                topic_id=s.topic_id(t) if version >= 10 else Uuid.from_int(0),
                partition_indexes=p,
            )
            for t, p in topics.items()
        ]
    group = OffsetFetchRequestGroup(
        group_id=G,
        member_id=member.member_id if member else None,
        member_epoch=(member.epoch if epoch is None else epoch) if member else -1,
        topics=wanted,
    )
    s.call(label, OffsetFetchRequest(groups=[group], require_stable=require_stable), group=G, version=version)


@scenario()
def commits_of_a_group_without_members(s: Script) -> None:
    s.topic("t", 2)
    commit(s, "commit by topic id (v10)", {("t", 0): 5, ("t", 1): 7})
    fetch(s, "fetch by topic id", {"t": [0, 1]})
    commit(s, "commit by name (v9)", {("t", 0): 6}, version=9)
    fetch(s, "fetch by name (v9)", {"t": [0, 1]}, version=9)
    fetch(s, "fetch every partition", None)
    fetch(s, "fetch a partition never committed", {"t": [1]}, version=9)


@scenario()
def commits_to_unknown_topics(s: Script) -> None:
    s.topic("t", 1)
    commit(s, "an unknown topic id", {("ghost", 0): 1}, by_id={"ghost": Uuid.from_int(77)})
    commit(s, "an unknown topic name (v9)", {("ghost", 0): 1}, version=9)
    commit(s, "a partition the topic does not have", {("t", 5): 1})


@scenario()
def member_epoch_rules_of_commits(s: Script) -> None:
    s.topic("t", 2)
    a = ScriptedMember(s, G, "A", topics=["t"])
    a.join()
    converge(s, G, [a])
    commit(s, "the member's epoch", {("t", 0): 1}, member=a)
    commit(s, "an older epoch (stale)", {("t", 0): 2}, member=a, epoch=a.epoch - 1)
    commit(s, "a newer epoch (fenced)", {("t", 0): 3}, member=a, epoch=a.epoch + 1)
    commit(s, "an unknown member", {("t", 0): 4}, member=ScriptedMember(s, G, "stranger"), epoch=1)
    commit(s, "no member in a group with members", {("t", 0): 5})
    fetch(s, "what was committed", {"t": [0]})


@scenario()
def member_epoch_rules_of_fetches(s: Script) -> None:
    s.topic("t", 2)
    a = ScriptedMember(s, G, "A", topics=["t"])
    a.join()
    converge(s, G, [a])
    commit(s, "commit", {("t", 0): 3, ("t", 1): 4}, member=a)
    fetch(s, "with the member's epoch", {"t": [0, 1]}, member=a)
    fetch(s, "with an older epoch", {"t": [0]}, member=a, epoch=a.epoch - 1)
    fetch(s, "with a newer epoch", {"t": [0]}, member=a, epoch=a.epoch + 1)
    fetch(s, "an unknown member", {"t": [0]}, member=ScriptedMember(s, G, "stranger"), epoch=1)
    fetch(s, "require_stable", {"t": [0]}, member=a, require_stable=True)


@scenario()
def offsets_of_an_unknown_group(s: Script) -> None:
    s.topic("t", 1)
    fetch(s, "an unknown group by topic", {"t": [0]})
    fetch(s, "an unknown group, every partition", None)


@scenario()
def offset_delete(s: Script) -> None:
    s.topic("t", 2)
    s.topic("u", 1)

    def delete(label: str, topics: dict[str, list[int]]) -> None:
        request = OffsetDeleteRequest(
            group_id=G,
            topics=[
                OffsetDeleteRequestTopic(
                    name=s.t(t), partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in ps]
                )
                for t, ps in topics.items()
            ],
        )
        s.call(label, request, group=G)

    delete("an unknown group", {"t": [0]})
    commit(s, "commit", {("t", 0): 1, ("t", 1): 1, ("u", 0): 1})
    a = ScriptedMember(s, G, "A", topics=["t"])
    a.join()
    converge(s, G, [a])
    delete("a subscribed topic", {"t": [0]})
    delete("a topic nobody subscribes to", {"u": [0]})
    fetch(s, "what is left", None)


@scenario()
def list_offsets(s: Script) -> None:
    s.topic("t", 2)
    now = int(time.time() * 1000)
    s.cluster.produce(s.t("t"), [b"a", b"b", b"c"], partition=0)

    def ask(label: str, timestamp: int, partitions: tuple[int, ...] = (0, 1), isolation: int = 0) -> None:
        topic = ListOffsetsTopic(
            name=s.t("t"),
            partitions=[ListOffsetsPartition(partition_index=p, timestamp=timestamp) for p in partitions],
        )
        answer = s.send(ListOffsetsRequest(isolation_level=isolation, topics=[topic]))
        plain = s.plain(answer)
        for t in plain["topics"]:
            for p in t["partitions"]:
                if p["timestamp"] not in (-1,):
                    p["timestamp"] = "<a record's time>"  # the append time differs between runs
        s.observe(label, plain)

    ask("earliest", EARLIEST_TIMESTAMP)
    ask("latest", LATEST_TIMESTAMP)
    ask("latest, read_committed", LATEST_TIMESTAMP, isolation=1)
    ask("max timestamp", MAX_TIMESTAMP)
    ask("a timestamp before the records", now - 60_000)
    ask("a timestamp after the records", now + 60_000)
    ask("a partition the topic does not have", EARLIEST_TIMESTAMP, partitions=(9,))


@scenario()
def offsets_of_a_deleted_topic_are_gone(s: Script) -> None:
    s.topic("doomed", 1)
    s.topic("kept", 1)
    commit(s, "commit both", {("doomed", 0): 4, ("kept", 0): 2})
    s.delete_topic("doomed")
    s.until("the deleted topic's offsets to go", lambda: len(_committed(s)) == 1)
    fetch(s, "what is left", None)


def _committed(s: Script) -> list[object]:
    answer = s.send(OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=G, topics=None)]), group=G)
    return [t for t in s.plain(answer)["groups"][0]["topics"] if t["partitions"]]


@scenario()
def older_offset_fetch_versions(s: Script) -> None:
    s.topic("t", 2)
    commit(s, "commit", {("t", 0): 9}, version=9)
    for version in (1, 2, 7, 8):
        if version < 8:
            request = OffsetFetchRequest(
                group_id=G, topics=[OffsetFetchRequestTopic(name=s.t("t"), partition_indexes=[0, 1])]
            )
        else:
            request = OffsetFetchRequest(
                groups=[
                    OffsetFetchRequestGroup(
                        group_id=G, topics=[OffsetFetchRequestTopics(name=s.t("t"), partition_indexes=[0, 1])]
                    )
                ]
            )
        s.call(f"OffsetFetch v{version}", request, group=G, version=version)
