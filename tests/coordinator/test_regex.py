"""Regex subscriptions (facts §5.9), resolved as Apache Kafka does: a regex the group has not
resolved yet subscribes the member to nothing until its resolution, which runs after the heartbeat
that brought it is answered (a timer due at once, as Kafka's background thread), writes the
resolution and bumps the group epoch. The fidelity suite holds this to Kafka's epochs.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kconsumer.assignment.interface import SubscriptionType
from kconsumer.broker.coordinator.records import GroupEpochRecord, RegexRecord, RegexTombstone
from kconsumer.broker.coordinator.target import build_group_spec
from kconsumer.protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest


def raw(d: Any, member_id: str, epoch: int, **fields: Any) -> Any:
    """A heartbeat that must succeed, then the timers it made due (a regex's resolution); the
    heartbeat's Result with the records of both."""
    request = ConsumerGroupHeartbeatRequest(group_id="g", member_id=member_id, member_epoch=epoch, **fields)
    result = d.coordinator.heartbeat(request, 1, d.now, "client", "/127.0.0.1")
    assert result.response.error_code == 0, result.response.error_message
    return dataclasses.replace(result, records=[*result.records, *d.coordinator.poll(d.now)])


def settled(d: Any, member_id: str, response: Any) -> Any:
    """The next heartbeat's answer (after a regex's resolution, which follows the first one)."""
    return d.heartbeat(member_id, response.member_epoch)


def join_regex(d: Any, member_id: str, regex: str, **fields: Any) -> Any:
    """Join with a regex and heartbeat once more: the answer after its resolution."""
    fields.setdefault("subscribed_topic_names", None)
    return settled(d, member_id, d.join(member_id, subscribed_topic_regex=regex, **fields))


def resolved(d: Any) -> dict[str, set[str]]:
    g = d.coordinator.group("g")
    return {regex: set(r.topics) for regex, r in g.resolved_regexes.items()}


def epochs(records: list[Any]) -> list[int]:
    return [r.epoch for r in records if isinstance(r, GroupEpochRecord)]


def test_regex_matches_full_topic_names(driver: Any) -> None:
    d = driver
    for name in ("foo", "foobar", "xfoo", "bar"):
        d.create_topic(name, 1)
    response = join_regex(d, "A", "foo")
    assert d.response_assignment(response) == {"foo": [0]}
    assert resolved(d) == {"foo": {"foo"}}
    response = join_regex(d, "B", "foo.*")
    assert resolved(d) == {"foo": {"foo"}, "foo.*": {"foo", "foobar"}}
    assert set(d.target("B")) <= {"foo", "foobar"} and "foobar" in d.target("B")


def test_resolution_is_recorded_with_the_image_version(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 1)
    d.create_topic("bar", 1)
    result = raw(d, "A", 0, rebalance_timeout_ms=1, subscribed_topic_regex="ba.", topic_partitions=[])
    regex_records = [r for r in result.records if isinstance(r, RegexRecord)]
    assert len(regex_records) == 1
    record = regex_records[0]
    assert (record.regex, set(record.resolved.topics)) == ("ba.", {"bar"})
    assert record.resolved.metadata_version == d.coordinator.image.version
    assert record.resolved.timestamp_ms == d.now


def test_a_regex_that_matches_nothing(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    response = join_regex(d, "A", "nothing-.*")
    assert d.response_assignment(response) is None  # a new epoch, the same (empty) assignment
    assert resolved(d) == {"nothing-.*": set()} and d.assigned("A") == {}


def test_names_and_regex_together(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 1)
    d.create_topic("bar", 1)
    d.create_topic("baz", 1)
    first = d.join("A", topics=["foo"], subscribed_topic_regex="ba[rz]")
    assert d.response_assignment(first) == {"foo": [0]}  # the regex is resolved after this answer
    response = settled(d, "A", first)
    assert response.member_epoch == first.member_epoch + 1
    assert d.response_assignment(response) == {"bar": [0], "baz": [0], "foo": [0]}


def test_a_new_regex_is_resolved_after_the_answer_and_bumps_the_epoch(driver: Any) -> None:
    """As Kafka 4.4 answers: the join of a regex-only member does not bump the new group's epoch
    (1); its resolution does (2), when it matches a topic."""
    d = driver
    d.create_topic("foo", 2)
    first = d.join("A", subscribed_topic_names=None, subscribed_topic_regex="fo+")
    assert (first.member_epoch, d.response_assignment(first)) == (1, {})
    assert d.coordinator.group("g").group_epoch == 2  # resolved right after the answer
    assert d.response_assignment(settled(d, "A", first)) == {"foo": [0, 1]}
    nothing = d.join("B", subscribed_topic_names=None, subscribed_topic_regex="nothing-.*")
    assert nothing.member_epoch == 2 and d.coordinator.group("g").group_epoch == 2  # no bump at all


def test_a_topic_created_later_is_picked_up(driver: Any) -> None:
    d = driver
    d.create_topic("foo-1", 2)
    join_regex(d, "A", "foo-.*")
    g = d.coordinator.group("g")
    assert (g.group_epoch, g.assignment_epoch) == (2, 2)
    d.create_topic("foo-2", 2)
    assert resolved(d) == {"foo-.*": {"foo-1", "foo-2"}}
    assert g.group_epoch == 3  # the new topic changes the resolution and the metadata hash
    response = d.heartbeat("A", 2)
    assert (response.member_epoch, d.response_assignment(response)) == (3, {"foo-1": [0, 1], "foo-2": [0, 1]})


def test_a_topic_created_that_does_not_match_changes_nothing(driver: Any) -> None:
    d = driver
    d.create_topic("foo-1", 2)
    join_regex(d, "A", "foo-.*")
    records = d.coordinator.update_metadata(d.coordinator.image, d.now)  # the same image: nothing
    assert records == []
    d.create_topic("bar", 2)
    g = d.coordinator.group("g")
    assert g.group_epoch == 2 and resolved(d) == {"foo-.*": {"foo-1"}}


def test_a_deleted_topic_is_dropped(driver: Any) -> None:
    d = driver
    d.create_topic("foo-1", 2)
    d.create_topic("foo-2", 2)
    join_regex(d, "A", "foo-.*")
    assert d.assigned("A") == {"foo-1": [0, 1], "foo-2": [0, 1]}
    foo2 = d.topic_id("foo-2")
    d.delete_topic("foo-2")
    g = d.coordinator.group("g")
    assert resolved(d) == {"foo-.*": {"foo-1"}}
    assert g.group_epoch == 3
    response = d.heartbeat("A", 2, owned={"foo-1": [0, 1]})
    assert response.member_epoch == 3
    assert d.response_assignment(response) == {"foo-1": [0, 1]}
    assert foo2 not in d.member("A").current.assigned
    assert g.target_of("A").partitions.keys() == {d.topic_id("foo-1")}


def test_regex_change_bumps(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.create_topic("bar", 2)
    join_regex(d, "A", "foo")
    result = raw(d, "A", 2, subscribed_topic_regex="bar")
    assert epochs(result.records) == [3]
    assert resolved(d) == {"bar": {"bar"}}  # the old one, now unused, is gone
    assert d.target("A") == {"bar": [0, 1]}


def test_regex_change_to_one_already_resolved_bumps(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.create_topic("bar", 2)
    join_regex(d, "A", "foo")
    join_regex(d, "B", "bar")
    result = raw(d, "A", 2, subscribed_topic_regex="bar")
    assert result.response.error_code == 0
    assert not any(isinstance(r, RegexRecord) for r in result.records)  # no new resolution
    assert epochs(result.records) == [4]


def test_regex_removal_bumps(driver: Any) -> None:
    """4.2+ (KAFKA-19891): a regex changed to empty bumps the epoch."""
    d = driver
    d.create_topic("foo", 2)
    join_regex(d, "A", "foo")
    result = raw(d, "A", 2, subscribed_topic_regex="")
    assert epochs(result.records) == [3]
    assert d.member("A").metadata.subscribed_topic_regex is None
    assert d.target("A") == {}


def test_regex_replaced_by_names_bumps(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    join_regex(d, "A", "fo+")
    result = raw(d, "A", 2, subscribed_topic_regex="", subscribed_topic_names=["foo"])
    assert epochs(result.records) == [3]
    assert d.target("A") == {"foo": [0, 1]}


def test_same_regex_sent_again_does_not_bump(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    join_regex(d, "A", "fo+")
    assert epochs(raw(d, "A", 2, subscribed_topic_regex="fo+").records) == []
    # An empty regex with names, as librdkafka always sends, is "no regex": unchanged.
    d.join("B", topics=["foo"], subscribed_topic_regex="")
    epoch = d.coordinator.group("g").group_epoch
    assert epochs(raw(d, "B", epoch, subscribed_topic_regex="", subscribed_topic_names=["foo"]).records) == []


def test_last_user_dropping_a_regex_tombstones_it(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    d.create_topic("bar", 2)
    join_regex(d, "A", "foo")
    join_regex(d, "B", "foo")
    result = raw(d, "A", 2, subscribed_topic_regex="bar")
    assert not any(isinstance(r, RegexTombstone) for r in result.records)  # B still uses it
    assert resolved(d) == {"foo": {"foo"}, "bar": {"bar"}}
    epoch = d.member("B").member_epoch
    result = raw(d, "B", epoch, subscribed_topic_regex="")
    assert [r.regex for r in result.records if isinstance(r, RegexTombstone)] == ["foo"]
    assert resolved(d) == {"bar": {"bar"}}


def test_a_leaving_member_tombstones_its_regex(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    join_regex(d, "A", "foo")
    d.join("B")
    result = raw(d, "A", -1)
    assert [r.regex for r in result.records if isinstance(r, RegexTombstone)] == ["foo"]
    assert resolved(d) == {}


def test_a_timed_out_member_tombstones_its_regex(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    join_regex(d, "A", "foo")
    records = d.coordinator.poll(d.now + d.config.session_timeout_ms)
    assert [r.regex for r in records if isinstance(r, RegexTombstone)] == ["foo"]


def test_subscription_type_with_regexes(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 2)
    join_regex(d, "A", "fo+")
    join_regex(d, "B", "fo+")
    g = d.coordinator.group("g")
    image = d.coordinator.image
    assert g.is_homogeneous() and build_group_spec(g, image).subscription_type == SubscriptionType.HOMOGENEOUS
    join_regex(d, "C", "f.*")  # a second regex
    assert build_group_spec(g, image).subscription_type == SubscriptionType.HETEROGENEOUS
    d.heartbeat("C", -1)
    assert g.is_homogeneous()
    d.join("D", topics=["foo"])  # names mixed with a regex, even resolving to the same topics
    assert build_group_spec(g, image).subscription_type == SubscriptionType.HETEROGENEOUS


def test_regex_member_and_name_member_share_topics(driver: Any) -> None:
    d = driver
    d.create_topic("foo", 4)
    join_regex(d, "A", "fo+")
    d.join("B", topics=["foo"])
    d.heartbeat("A", 2, owned={"foo": range(4)})
    d.heartbeat("A", 2, owned=d.target("A"))
    d.heartbeat("B", 3, owned={})
    assert sorted(len(d.assigned(m)["foo"]) for m in "AB") == [2, 2]


def test_metadata_hash_covers_regex_topics(driver: Any) -> None:
    # A partition added to a topic known only through a regex bumps the epoch.
    d = driver
    d.create_topic("foo-1", 2)
    join_regex(d, "A", "foo-.*")
    d.set_partitions("foo-1", 3)
    g = d.coordinator.group("g")
    assert g.group_epoch == 3
    response = d.heartbeat("A", 2)
    assert d.response_assignment(response) == {"foo-1": [0, 1, 2]}


def test_describe_shows_the_regex(driver: Any) -> None:
    from kconsumer.protocol.messages.consumer_group import ConsumerGroupDescribeRequest

    d = driver
    d.create_topic("foo", 1)
    join_regex(d, "A", "fo+")
    response = d.coordinator.describe(ConsumerGroupDescribeRequest(group_ids=["g"]), 1, d.now).response
    member = response.groups[0].members[0]
    assert (member.subscribed_topic_regex, member.subscribed_topic_names) == ("fo+", [])
