"""kconsumer against the reference cluster when topics change: regex subscriptions picking up a topic
created later, partitions added to a subscribed topic, a topic deleted and created again."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from consumer_harness import Feeder, Ledger, Member, cluster_committed, config, wait_until

from kconsumer import KafkaError, SubscriptionPattern
from kconsumer.testing import ReferenceCluster

pytestmark = pytest.mark.timeout(120)

GROUP = "group"
MemberFactory = Callable[..., Member]
FeederFactory = Callable[..., Feeder]


@pytest.mark.parametrize(
    "subscription",
    [SubscriptionPattern("orders-.*"), ["^orders-.*"], ["^orders-eu", "^orders-(us|asia)"]],
    ids=["SubscriptionPattern", "caret", "several-carets"],
)
def test_regex_subscription_picks_up_a_topic_created_later(
    cluster: ReferenceCluster,
    members: MemberFactory,
    subscription: SubscriptionPattern | list[str],
) -> None:
    cluster.create_topic("orders-eu", 2)
    cluster.create_topic("payments", 2)
    cluster.produce("payments", ["not for us"] * 4)
    produced = {("orders-eu", p): cluster.produce("orders-eu", ["a", "b"], partition=p) for p in range(2)}
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    a = members(ledger, "a", config(cluster.bootstrap_servers, GROUP), subscription)
    b = members(ledger, "b", config(cluster.bootstrap_servers, GROUP), subscription)
    wait_until(lambda: ledger.has_all(produced), what="the existing topic's records")
    group = cluster.describe_group(GROUP)
    assert group is not None
    assert {m.subscribed_regex for m in group.members.values()} == {
        subscription.pattern
        if isinstance(subscription, SubscriptionPattern)
        else subscription[0]
        if len(subscription) == 1
        else "(?:^orders-eu)|(?:^orders-(us|asia))"
    }
    assert {m.subscribed_topics for m in group.members.values()} == {()}

    cluster.create_topic("orders-us", 2)
    produced.update(
        {("orders-us", p): cluster.produce("orders-us", ["c", "d", "e"], partition=p) for p in range(2)}
    )
    wait_until(lambda: ledger.has_all(produced), what="the new topic's records")
    wait_until(lambda: len(a.owned()) == len(b.owned()) == 2, what="the four partitions shared")
    assert a.owned() | b.owned() == {(t, p) for t in ("orders-eu", "orders-us") for p in range(2)}
    a.close()
    b.close()
    ledger.check(produced)
    assert all(key[0] != "payments" for _m, key, _o, _i in ledger.receipts)
    assert a.errors == b.errors == []


def test_partitions_added_are_assigned_and_consumed_from_the_start(
    cluster: ReferenceCluster, members: MemberFactory, feeders: FeederFactory
) -> None:
    cluster.create_topic("grows", 2)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    feeder = feeders(cluster, "grows")
    settings = config(cluster.bootstrap_servers, GROUP)
    a = members(ledger, "a", settings, ["grows"])
    b = members(ledger, "b", settings, ["grows"])
    wait_until(lambda: len(a.owned()) == len(b.owned()) == 1, what="one partition each")
    epoch = cluster.describe_group(GROUP).epoch  # type: ignore[union-attr]

    cluster.create_partitions("grows", 6)
    wait_until(lambda: len(a.owned()) == len(b.owned()) == 3, what="three partitions each")
    assert cluster.describe_group(GROUP).epoch > epoch  # type: ignore[union-attr]
    wait_until(lambda: feeder.total() > 200, what="records on the new partitions")
    produced = feeder.stop()
    assert {p for _t, p in produced} == set(range(6))
    wait_until(lambda: ledger.has_all(produced), what="every record, new partitions included")
    a.close()
    b.close()
    ledger.check(produced)
    assert a.errors == b.errors == []


def test_subscription_changes_and_heterogeneous_subscriptions(
    cluster: ReferenceCluster, members: MemberFactory, feeders: FeederFactory
) -> None:
    """A member moves from one topic to another while consuming; then members with different
    subscriptions share the topics (each only gets what it subscribed to)."""
    for name in ("left", "right"):
        cluster.create_topic(name, 2)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    left, right = feeders(cluster, "left"), feeders(cluster, "right")
    settings = config(cluster.bootstrap_servers, GROUP)
    a = members(ledger, "a", settings, ["left"])
    wait_until(lambda: a.owned() == {("left", 0), ("left", 1)} and ledger.consuming("a"), what="a on left")

    a.resubscribe(["right"])
    wait_until(lambda: a.owned() == {("right", 0), ("right", 1)} and ledger.consuming("a"), what="a on right")
    assert a.revoked_calls == 1 and a.lost_calls == 0
    group = cluster.describe_group(GROUP)
    assert group is not None and [m.subscribed_topics for m in group.members.values()] == [("right",)]

    b = members(ledger, "b", settings, ["left", "right"])
    wait_until(
        lambda: (
            b.owned() == {("left", 0), ("left", 1)} and len(a.owned()) == 2 and ledger.consuming("a", "b")
        ),
        what="b with left (balance before stickiness), a keeping right",
    )
    a.resubscribe(["left"])  # a and b swap topics: revocations on both sides
    wait_until(
        lambda: (
            a.owned() == {("left", 0), ("left", 1)}
            and b.owned() == {("right", 0), ("right", 1)}
            and ledger.consuming("a", "b")
        ),
        what="a on left, b on right",
    )
    produced = {**left.stop(), **right.stop()}
    wait_until(lambda: ledger.has_all(produced), what="every record")
    a.close()
    b.close()
    # Records of left produced while nobody subscribed to it were read later, from the committed offsets.
    ledger.check(produced)
    assert a.errors == b.errors == []


def test_a_second_consumer_with_the_same_instance_id_fails_clearly(
    cluster: ReferenceCluster, members: MemberFactory
) -> None:
    cluster.create_topic("t", 2)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    static = config(cluster.bootstrap_servers, GROUP, group_instance_id="only-one")
    first = members(ledger, "first", static, ["t"])
    wait_until(lambda: len(first.owned()) == 2, what="the first static member")
    second = members(ledger, "second", static, ["t"])
    wait_until(lambda: second.errors, what="the second one's error")
    error = second.errors[0].args[0]
    assert error.code() == KafkaError._FATAL and "UNRELEASED_INSTANCE_ID" in error.str()  # as confluent
    assert "group.instance.id 'only-one'" in error.str()
    assert len(first.owned()) == 2 and first.errors == [] and first.lost_calls == 0
    group = cluster.describe_group(GROUP)
    assert group is not None and list(group.members) == [first.consumer.memberid()]
    second.close()
    first.close()
    ledger.check()


@pytest.mark.parametrize("reset", ["earliest", "latest"])
def test_deleted_and_recreated_topic_starts_per_auto_offset_reset(
    cluster: ReferenceCluster, members: MemberFactory, reset: str
) -> None:
    """The member stays subscribed while its topic is deleted and created again (with records
    already in it): it must read the new topic from its start (earliest) or its end (latest), not
    from the offsets it committed, nor the positions it had, on the old one."""
    topic, keys = "phoenix", [("phoenix", 0), ("phoenix", 1)]
    cluster.create_topic(topic, 2)
    ledger = Ledger(cluster_committed(cluster, GROUP))
    ledger.sample_group(cluster, GROUP)
    member = members(ledger, "a", config(cluster.bootstrap_servers, GROUP, auto_offset_reset=reset), [topic])
    wait_until(lambda: member.owned() == set(keys), what="the partitions")

    def consumed_some() -> bool:
        for _topic, partition in keys:
            cluster.produce(topic, ["old"], partition=partition)
        return all(ledger.count([key]) >= 2 for key in keys)

    wait_until(consumed_some, interval=0.1, what="records of the old topic consumed")
    ends = [high for _low, high in cluster.watermarks(topic)]
    wait_until(
        lambda: cluster.committed(GROUP) == dict(zip(keys, ends, strict=True)),
        what="the old offsets committed",
    )
    assert max(ends) < 30
    old_id = cluster.topic_id(topic)

    member.pause()
    cluster.delete_topic(topic)
    assert cluster.committed(GROUP) == {}, "the deleted topic's offsets must go"
    assert cluster.create_topic(topic, 2) != old_id
    for _topic, partition in keys:
        cluster.produce(topic, [f"new{i}" for i in range(30)], partition=partition)
    member.resume()
    wait_until(lambda: member.revoked_calls == 1, what="the old topic's partitions revoked")

    def new_records() -> bool:
        for _topic, partition in keys:
            cluster.produce(topic, ["newer"], partition=partition)
        fresh = [i for i in ledger.intervals if i.start > 0 and i.member == "a"][2:]
        return len(fresh) == 2 and all(i.offsets for i in fresh)

    wait_until(new_records, interval=0.1, what="records of the new topic")
    fresh = [i for i in ledger.intervals if i.member == "a"][2:]
    assert sorted(i.key for i in fresh) == keys
    for interval in fresh:
        assert interval.committed_at_start is None, "an old committed offset leaked to the new topic"
        if reset == "earliest":
            assert interval.offsets[:30] == list(range(30)), "the new topic must be read from its start"
        else:
            assert interval.offsets[0] >= 30, "the new topic must be read from its end"
    member.close()
    ledger.check()
    assert member.errors == []
    # Committing the deleted topic's offsets on revocation fails at once (it must not be retried).
    assert all("UNKNOWN_TOPIC" in str(e) or "not assigned" in str(e) for e in member.commit_failures)
