"""OffsetCommit and OffsetFetch validation (facts §5.13, §5.14; Kafka 4.3 rules).

The broker-level checks (unknown topics and partitions) are done by the coordinator here, as the
reference server has no separate request layer.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

from kconsumer.broker.coordinator.records import OffsetCommitRecord, SimpleGroupRecord
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.list_groups import ListGroupsRequest
from kconsumer.protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from kconsumer.protocol.uuid import Uuid

GHOST_ID = Uuid.from_int(0x999)
NONE = ErrorCode.NONE
STALE = ErrorCode.STALE_MEMBER_EPOCH

# A partition to commit: its index, or (index, metadata).
Part = int | tuple[int, str | None]


def _topic_id(d: Any, name: str) -> Uuid:
    return d.topic_id(name) if name in d.topics else GHOST_ID


def commit_request(
    d: Any,
    parts: dict[str, Iterable[Part]],
    *,
    group: str | None = "g",
    member: str = "",
    epoch: int = -1,
    offset: int = 100,
    instance: str | None = None,
) -> OffsetCommitRequest:
    topics = []
    for name, items in parts.items():
        partitions = []
        for item in items:
            index, metadata = item if isinstance(item, tuple) else (item, "")
            partitions.append(
                OffsetCommitRequestPartition(
                    partition_index=index,
                    committed_offset=offset,
                    committed_leader_epoch=7,
                    committed_metadata=metadata,
                )
            )
        topics.append(OffsetCommitRequestTopic(name=name, topic_id=_topic_id(d, name), partitions=partitions))
    return OffsetCommitRequest(
        group_id=group,  # None: a null group id, built in-process
        generation_id_or_member_epoch=epoch,
        member_id=member,
        group_instance_id=instance,
        topics=topics,
    )


def commit(
    d: Any, parts: dict[str, Iterable[Part]], version: int = 9, **kw: Any
) -> dict[tuple[str, int], int]:
    """{(topic, partition): error code} of one OffsetCommit."""
    request = commit_request(d, parts, **kw)
    response = d.coordinator.offset_commit(request, version, d.now).response
    assert len(response.topics) == len(request.topics)
    codes = {}
    for sent, topic in zip(request.topics, response.topics, strict=True):
        assert (topic.name, topic.topic_id) == (sent.name, sent.topic_id)
        for partition in topic.partitions:
            codes[(sent.name, partition.partition_index)] = partition.error_code
    return codes


def all_codes(codes: dict[tuple[str, int], int]) -> set[int]:
    return set(codes.values())


def stored(d: Any, group: str = "g") -> dict[tuple[str, int], int]:
    return {key: value.offset for key, value in d.coordinator.state.offsets.get(group, {}).items()}


def fetch_v8(
    d: Any,
    parts: dict[str, list[int]] | None,
    *,
    group: str | None = "g",
    member: str | None = None,
    epoch: int = -1,
    version: int = 9,
) -> tuple[int, dict[tuple[str, int], tuple[int, int, str | None, int]]]:
    """(group error, {(topic, partition): (offset, leader epoch, metadata, error)}) of a v8+ fetch."""
    topics = (
        None
        if parts is None
        else [
            OffsetFetchRequestTopics(name=name, topic_id=_topic_id(d, name), partition_indexes=p)
            for name, p in parts.items()
        ]
    )
    request = OffsetFetchRequest(
        groups=[OffsetFetchRequestGroup(group_id=group, member_id=member, member_epoch=epoch, topics=topics)]
    )
    response = d.coordinator.offset_fetch(request, version, d.now).response
    assert len(response.groups) == 1
    result = response.groups[0]
    assert result.group_id == group
    names = {t.topic_id: n for n, t in d.topics.items()}
    out = {}
    for topic in result.topics:
        name = topic.name if version < 10 else names.get(topic.topic_id, "?")
        for p in topic.partitions:
            out[(name, p.partition_index)] = (
                p.committed_offset,
                p.committed_leader_epoch,
                p.metadata,
                p.error_code,
            )
    return result.error_code, out


def offsets_of(result: dict[tuple[str, int], tuple[int, int, str | None, int]]) -> dict[tuple[str, int], int]:
    return {key: value[0] for key, value in result.items()}


@pytest.fixture
def d(driver: Any) -> Any:
    driver.create_topic("foo", 4)
    driver.create_topic("bar", 2)
    return driver


def group_with_history(d: Any) -> None:
    """A (range assignor) holds foo-0..3 and bar-0..1 since epoch 2 and baz-0..1 since epoch 3; B
    joined at epoch 4, so A (epoch 3) is revoking foo-2, foo-3, bar-1 (assigned at 2) and baz-1
    (assigned at 3)."""
    d.join("A", topics=["foo", "bar", "baz"], server_assignor="range")
    assert dict(d.member("A").current.assigned[d.topic_id("foo")]) == {0: 2, 1: 2, 2: 2, 3: 2}
    d.create_topic("baz", 2)  # bumps: A gets baz at epoch 3
    d.heartbeat("A", 2, owned={"foo": range(4), "bar": range(2)})
    assert d.member("A").member_epoch == 3
    d.join("B", topics=["foo", "bar", "baz"], server_assignor="range")
    d.heartbeat("A", 3, owned={"foo": range(4), "bar": range(2), "baz": range(2)})
    member = d.member("A")
    assert member.member_epoch == 3 and d.coordinator.group("g").group_epoch == 4
    assert d.pending("A") == {"bar": [1], "baz": [1], "foo": [2, 3]}
    assert d.assigned("A") == {"bar": [0], "baz": [0], "foo": [0, 1]}
    assert d.member("B").member_epoch == 4 and d.assigned("B") == {}


# -- broker-level checks ------------------------------------------------------------------------


def test_v10_unknown_topic_id(d: Any) -> None:
    codes = commit(d, {"foo": [0], "ghost": [0, 1]}, version=10)
    assert codes == {("foo", 0): NONE, ("ghost", 0): ErrorCode.UNKNOWN_TOPIC_ID, ("ghost", 1): 100}
    assert stored(d) == {("foo", 0): 100}


def test_v9_unknown_topic_name_and_partition(d: Any) -> None:
    codes = commit(d, {"foo": [0, 4, -1], "ghost": [0]}, version=9)
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert codes == {("foo", 0): NONE, ("foo", 4): unknown, ("foo", -1): unknown, ("ghost", 0): unknown}
    assert stored(d) == {("foo", 0): 100}


def test_v10_partition_out_of_range(d: Any) -> None:
    assert commit(d, {"bar": [2]}, version=10) == {("bar", 2): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


@pytest.mark.parametrize("version", [2, 7, 8, 9, 10])
def test_values_are_stored_with_the_topic_id(d: Any, version: int) -> None:
    d.now = 12_345
    assert commit(d, {"bar": [(1, "meta")]}, version=version) == {("bar", 1): NONE}
    value = d.coordinator.state.offsets["g"][("bar", 1)]
    assert (value.offset, value.leader_epoch, value.metadata, value.commit_timestamp_ms) == (
        100,
        7,
        "meta",
        12_345,
    )
    assert value.topic_id == d.topic_id("bar")


def test_null_group_id_is_invalid(d: Any) -> None:
    codes = commit(d, {"foo": [0], "ghost": [0]}, group=None)
    assert codes == {
        ("foo", 0): ErrorCode.INVALID_GROUP_ID,
        ("ghost", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert d.coordinator.state.offsets == {}


def test_empty_group_id_is_supported(d: Any) -> None:
    """Kafka only rejects a null group id; the empty one is accepted "for backwards compatibility"."""
    assert all_codes(commit(d, {"foo": [0]}, group="")) == {NONE}
    assert stored(d, "") == {("foo", 0): 100}
    error, result = fetch_v8(d, {"foo": [0]}, group="")
    assert (error, offsets_of(result)) == (0, {("foo", 0): 100})


# -- the group does not exist -------------------------------------------------------------------


@pytest.mark.parametrize("epoch", [-1, -2, -100])
def test_missing_group_with_a_negative_epoch_creates_a_simple_group(d: Any, epoch: int) -> None:
    result = d.coordinator.offset_commit(
        commit_request(d, {"foo": [0, 1]}, epoch=epoch, member="x"), 9, d.now
    )
    assert {p.error_code for t in result.response.topics for p in t.partitions} == {NONE}
    assert isinstance(result.records[0], SimpleGroupRecord)
    assert [type(r) for r in result.records[1:]] == [OffsetCommitRecord, OffsetCommitRecord]
    assert "g" in d.coordinator.state.simple_groups and d.coordinator.group("g") is None
    listed = d.coordinator.list_groups(ListGroupsRequest(), 5, d.now).response.groups
    assert [(g.group_id, g.group_type, g.group_state) for g in listed] == [("g", "classic", "Empty")]


@pytest.mark.parametrize(("version", "code"), [(10, 69), (9, 69), (8, 22), (7, 22), (2, 22)])
def test_missing_group_with_an_epoch(d: Any, version: int, code: int) -> None:
    for epoch in (0, 1, 5):
        result = d.coordinator.offset_commit(
            commit_request(d, {"foo": [0]}, epoch=epoch, member="A"), version, d.now
        )
        assert result.response.topics[0].partitions[0].error_code == code
        assert result.records == []
    assert d.coordinator.state.simple_groups == set()


def test_simple_group_accepts_admin_commits_only(d: Any) -> None:
    commit(d, {"foo": [0]})
    assert all_codes(commit(d, {"foo": [1]}, epoch=-1, member="anyone")) == {NONE}
    # ClassicGroup.validateOffsetCommit: a generation >= 0 is checked against the (no) members.
    for version in (8, 9, 10):
        codes = commit(d, {"foo": [2]}, epoch=0, member="A", version=version)
        assert all_codes(codes) == {ErrorCode.UNKNOWN_MEMBER_ID}
    assert stored(d) == {("foo", 0): 100, ("foo", 1): 100}


# -- consumer groups: who may commit -------------------------------------------------------------


def test_empty_consumer_group_accepts_negative_epochs_without_member_checks(d: Any) -> None:
    d.join("A")
    d.heartbeat("A", -1)
    assert d.coordinator.group("g").members == {}
    assert all_codes(commit(d, {"foo": [0]}, epoch=-1)) == {NONE}
    assert all_codes(commit(d, {"foo": [1]}, epoch=-1, member="whoever")) == {NONE}
    # A non-negative epoch needs a member: there is none.
    assert all_codes(commit(d, {"foo": [2]}, epoch=2, member="A")) == {ErrorCode.UNKNOWN_MEMBER_ID}


def test_group_with_members_rejects_anonymous_commits(d: Any) -> None:
    d.join("A")
    assert all_codes(commit(d, {"foo": [0]}, epoch=-1, member="")) == {ErrorCode.UNKNOWN_MEMBER_ID}
    assert all_codes(commit(d, {"foo": [0]}, epoch=2, member="nobody")) == {ErrorCode.UNKNOWN_MEMBER_ID}
    # A real member id with -1 is a stale epoch.
    assert all_codes(commit(d, {"foo": [0]}, epoch=-1, member="A")) == {STALE}
    assert stored(d) == {}


@pytest.mark.parametrize("version", [2, 5, 7, 8])
def test_consumer_members_need_offset_commit_v9(d: Any, version: int) -> None:
    d.join("A")
    assert all_codes(commit(d, {"foo": [0]}, epoch=2, member="A", version=version)) == {
        ErrorCode.UNSUPPORTED_VERSION
    }
    # The member check comes first.
    codes = commit(d, {"foo": [0]}, epoch=2, member="nobody", version=version)
    assert all_codes(codes) == {ErrorCode.UNKNOWN_MEMBER_ID}
    assert all_codes(commit(d, {"foo": [0]}, epoch=2, member="A", version=9)) == {NONE}


# -- the 4.3 epoch rule: assignment epoch <= commit epoch <= member epoch ------------------------


def test_current_epoch_commits_anything(d: Any) -> None:
    group_with_history(d)
    codes = commit(d, {"foo": range(4), "bar": range(2)}, epoch=3, member="A", version=10)
    assert all_codes(codes) == {NONE}
    # Equal epoch: even partitions the member does not hold (B holds nothing yet).
    assert all_codes(commit(d, {"foo": [2]}, epoch=4, member="B")) == {NONE}


@pytest.mark.parametrize("epoch", [4, 5, 100])
def test_greater_epoch_is_stale(d: Any, epoch: int) -> None:
    group_with_history(d)
    assert all_codes(commit(d, {"foo": [0]}, epoch=epoch, member="A")) == {STALE}


def test_older_epoch_for_partitions_held_since_then(d: Any) -> None:
    group_with_history(d)
    # foo-0, foo-1, bar-0 assigned at 2; foo-2, foo-3, bar-1 pending revocation, assigned at 2.
    assert all_codes(commit(d, {"foo": range(4), "bar": range(2)}, epoch=2, member="A")) == {NONE}


def test_older_epoch_for_a_partition_assigned_later(d: Any) -> None:
    group_with_history(d)
    assert all_codes(commit(d, {"baz": [0]}, epoch=2, member="A")) == {STALE}  # assigned at 3
    assert all_codes(commit(d, {"baz": [0]}, epoch=3, member="A")) == {NONE}


def test_older_epoch_for_a_partition_pending_revocation_assigned_later(d: Any) -> None:
    group_with_history(d)
    assert all_codes(commit(d, {"baz": [1]}, epoch=2, member="A")) == {STALE}  # pending, assigned at 3
    assert all_codes(commit(d, {"baz": [1]}, epoch=3, member="A")) == {NONE}
    assert all_codes(commit(d, {"bar": [1]}, epoch=2, member="A")) == {NONE}  # pending, assigned at 2


def test_older_epoch_below_every_assignment(d: Any) -> None:
    group_with_history(d)
    assert all_codes(commit(d, {"foo": [0]}, epoch=1, member="A")) == {STALE}
    assert all_codes(commit(d, {"foo": [0]}, epoch=0, member="A")) == {STALE}


def test_older_epoch_for_a_partition_not_held(d: Any) -> None:
    group_with_history(d)
    assert all_codes(commit(d, {"foo": [2]}, epoch=3, member="B")) == {STALE}
    d.heartbeat("A", 3, owned={"foo": [0, 1], "bar": [0], "baz": [0]})  # A releases foo-2, foo-3 ...
    assert d.pending("A") == {}
    assert all_codes(commit(d, {"foo": [2]}, epoch=3, member="A")) == {STALE}  # ... so they are not its


def test_a_stale_partition_fails_the_whole_request(d: Any) -> None:
    group_with_history(d)
    result = d.coordinator.offset_commit(
        commit_request(d, {"foo": [0, 1], "baz": [0], "ghost": [0]}, epoch=2, member="A"), 9, d.now
    )
    codes = {(t.name, p.partition_index): p.error_code for t in result.response.topics for p in t.partitions}
    assert codes == {
        ("foo", 0): STALE,
        ("foo", 1): STALE,
        ("baz", 0): STALE,
        ("ghost", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,  # broker-level errors stay as they are
    }
    assert result.records == []


def test_static_member_after_a_temporary_leave(d: Any) -> None:
    # 4.3: a -2 leave resets the assignment epochs to 0; the member epoch is -2.
    d.join("A", instance_id="i")
    d.heartbeat("A", -2, instance_id="i")
    assert all_codes(commit(d, {"foo": [0]}, epoch=-2, member="A", instance="i")) == {NONE}
    assert all_codes(commit(d, {"foo": [0]}, epoch=0, member="A", instance="i")) == {STALE}
    # Back with epoch 0, it commits with its new epoch, and an older one for the kept partitions.
    response = d.join("A", instance_id="i")
    assert all_codes(commit(d, {"foo": [0]}, epoch=response.member_epoch, member="A")) == {NONE}
    assert all_codes(commit(d, {"foo": [0]}, epoch=0, member="A")) == {NONE}


# -- OFFSET_METADATA_TOO_LARGE ---------------------------------------------------------------------


def test_metadata_too_large_fails_that_partition_only(d: Any) -> None:
    codes = commit(d, {"foo": [(0, "x" * 4096), (1, "x" * 4097), (2, None)], "bar": [(0, "")]})
    assert codes == {
        ("foo", 0): NONE,
        ("foo", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE,
        ("foo", 2): 0,
        ("bar", 0): 0,
    }
    assert set(stored(d)) == {("foo", 0), ("foo", 2), ("bar", 0)}


def test_metadata_limit_follows_the_configuration(make_driver: Any) -> None:
    d = make_driver(offset_metadata_max_bytes=3)
    d.create_topic("foo", 2)
    assert commit(d, {"foo": [(0, "abc"), (1, "abcd")]}) == {
        ("foo", 0): NONE,
        ("foo", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE,
    }


def test_metadata_length_is_counted_as_kafka_does(d: Any) -> None:
    """Kafka compares Java's String.length() (UTF-16 code units), not the UTF-8 size."""
    codes = commit(d, {"foo": [(0, "é" * 4096), (1, "😀" * 2048), (2, "😀" * 2049)]})
    assert codes == {("foo", 0): NONE, ("foo", 1): NONE, ("foo", 2): ErrorCode.OFFSET_METADATA_TOO_LARGE}


def test_group_errors_come_before_metadata_errors(d: Any) -> None:
    d.join("A")
    assert all_codes(commit(d, {"foo": [(0, "x" * 5000)]}, epoch=9, member="A")) == {STALE}


def test_null_metadata_is_stored_as_empty(d: Any) -> None:
    commit(d, {"foo": [(0, None)]})
    assert d.coordinator.state.offsets["g"][("foo", 0)].metadata == ""
    _error, result = fetch_v8(d, {"foo": [0]})
    assert result[("foo", 0)] == (100, 7, "", 0)


# -- OffsetFetch ---------------------------------------------------------------------------------


def test_fetch_admin_needs_no_member(d: Any) -> None:
    d.join("A")
    commit(d, {"foo": [0]}, epoch=2, member="A")
    error, result = fetch_v8(d, {"foo": [0, 1]}, member=None, epoch=-1)
    assert error == 0
    assert result == {("foo", 0): (100, 7, "", 0), ("foo", 1): (-1, -1, "", 0)}


def test_fetch_member_checks(d: Any) -> None:
    d.join("A")
    d.join("B")
    d.heartbeat("A", 2, owned={"foo": range(4), "bar": range(2)})
    d.heartbeat("A", 2, owned=d.target("A"))  # A moves to epoch 3, previous epoch 2
    commit(d, {"foo": [0]}, epoch=3, member="A")
    assert fetch_v8(d, {"foo": [0]}, member="A", epoch=3) == (0, {("foo", 0): (100, 7, "", 0)})
    # The epoch must be equal: no tolerance for older epochs (KIP-1251 relaxes only commits).
    for epoch in (2, 4, 0, -1):
        assert fetch_v8(d, {"foo": [0]}, member="A", epoch=epoch) == (STALE, {}), epoch
    assert fetch_v8(d, {"foo": [0]}, member="nobody", epoch=3) == (ErrorCode.UNKNOWN_MEMBER_ID, {})
    # A non-null member id (even empty) or a non-negative epoch means a member check.
    assert fetch_v8(d, {"foo": [0]}, member="", epoch=-1) == (ErrorCode.UNKNOWN_MEMBER_ID, {})
    assert fetch_v8(d, {"foo": [0]}, member=None, epoch=3) == (ErrorCode.UNKNOWN_MEMBER_ID, {})


def test_fetch_member_check_in_an_empty_consumer_group(d: Any) -> None:
    d.join("A")
    commit(d, {"foo": [0]}, epoch=2, member="A")
    d.heartbeat("A", -1)
    assert fetch_v8(d, {"foo": [0]}, member="A", epoch=2) == (ErrorCode.UNKNOWN_MEMBER_ID, {})
    assert offsets_of(fetch_v8(d, {"foo": [0]})[1]) == {("foo", 0): 100}


def test_fetch_of_a_missing_group(d: Any) -> None:
    for member, epoch in ((None, -1), ("A", 5), ("", -1)):
        error, result = fetch_v8(d, {"foo": [0, 3], "ghost": [1]}, member=member, epoch=epoch)
        assert error == 0
        assert result == {
            ("foo", 0): (-1, -1, "", 0),
            ("foo", 3): (-1, -1, "", 0),
            ("ghost", 1): (-1, -1, "", 0),
        }


def test_fetch_of_a_simple_group_has_no_member_checks(d: Any) -> None:
    commit(d, {"foo": [0]})
    assert fetch_v8(d, {"foo": [0]}, member="someone", epoch=12) == (0, {("foo", 0): (100, 7, "", 0)})


@pytest.mark.parametrize("version", [8, 9, 10])
def test_fetch_all_topics(d: Any, version: int) -> None:
    commit(d, {"foo": [0, 3], "bar": [1]})
    error, result = fetch_v8(d, None, version=version)
    assert error == 0
    assert offsets_of(result) == {("bar", 1): 100, ("foo", 0): 100, ("foo", 3): 100}
    assert fetch_v8(d, None, group="missing", version=version) == (0, {})


def test_fetch_v10_by_topic_id(d: Any) -> None:
    commit(d, {"foo": [0]}, version=10)
    request = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(
                group_id="g",
                topics=[
                    OffsetFetchRequestTopics(topic_id=d.topic_id("foo"), partition_indexes=[0, 1]),
                    OffsetFetchRequestTopics(topic_id=GHOST_ID, partition_indexes=[0]),
                ],
            )
        ]
    )
    response = d.coordinator.offset_fetch(request, 10, d.now).response
    topics = response.groups[0].topics
    assert [t.topic_id for t in topics] == [d.topic_id("foo"), GHOST_ID]
    assert [(p.partition_index, p.committed_offset, p.error_code) for p in topics[0].partitions] == [
        (0, 100, 0),
        (1, -1, 0),
    ]
    assert [(p.partition_index, p.committed_offset, p.error_code) for p in topics[1].partitions] == [
        (0, -1, ErrorCode.UNKNOWN_TOPIC_ID)
    ]


def test_fetch_v8_several_groups(d: Any) -> None:
    commit(d, {"foo": [0]}, group="g1")
    d.join("A", group="g2")
    commit(d, {"foo": [1]}, group="g2", epoch=2, member="A")
    topics = [OffsetFetchRequestTopics(name="foo", partition_indexes=[0, 1])]
    request = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(group_id="g1", topics=topics),
            OffsetFetchRequestGroup(group_id="g2", member_id="A", member_epoch=1, topics=topics),
            OffsetFetchRequestGroup(group_id="g2", member_id="A", member_epoch=2, topics=topics),
            OffsetFetchRequestGroup(group_id="g3", topics=topics),
        ]
    )
    groups = d.coordinator.offset_fetch(request, 9, d.now).response.groups
    summary = [
        (g.group_id, g.error_code, [p.committed_offset for t in g.topics for p in t.partitions])
        for g in groups
    ]
    assert summary == [
        ("g1", 0, [100, -1]),
        ("g2", STALE, []),
        ("g2", 0, [-1, 100]),
        ("g3", 0, [-1, -1]),
    ]


def test_fetch_null_group_id_is_invalid(d: Any) -> None:
    assert fetch_v8(d, {"foo": [0]}, group=None) == (ErrorCode.INVALID_GROUP_ID, {})


@pytest.mark.parametrize("version", [1, 2, 5, 7])
def test_fetch_single_group_layout(d: Any, version: int) -> None:
    d.join("A")
    commit(d, {"foo": [(2, "m")]}, epoch=2, member="A")
    request = OffsetFetchRequest(
        group_id="g", topics=[OffsetFetchRequestTopic(name="foo", partition_indexes=[2, 3])]
    )
    response = d.coordinator.offset_fetch(request, version, d.now).response
    assert response.error_code == 0 and response.groups == []
    [topic] = response.topics
    assert topic.name == "foo"
    assert [(p.partition_index, p.committed_offset, p.metadata, p.error_code) for p in topic.partitions] == [
        (2, 100, "m", 0),
        (3, -1, "", 0),
    ]


@pytest.mark.parametrize("version", [2, 7])
def test_fetch_single_group_all_topics(d: Any, version: int) -> None:
    commit(d, {"foo": [0], "bar": [1]})
    response = d.coordinator.offset_fetch(
        OffsetFetchRequest(group_id="g", topics=None), version, d.now
    ).response
    got = {(t.name, p.partition_index): p.committed_offset for t in response.topics for p in t.partitions}
    assert got == {("foo", 0): 100, ("bar", 1): 100}
