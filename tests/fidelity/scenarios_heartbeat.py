"""Wire-level scenarios of ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848)."""

from __future__ import annotations

import time

from members import ScriptedMember, converge, describe, observe_group
from scenario import scenario
from script import Script

from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
)

G = "fidelity-group"


@scenario()
def join_with_a_client_chosen_member_id(s: Script) -> None:
    s.topic("t", 3)
    a = ScriptedMember(s, G, "A", topics=["t"])
    a.join("join")
    converge(s, G, [a])
    observe_group(s, "converged", G, [a])
    a.beat("steady heartbeat")


@scenario()
def join_without_a_member_id(s: Script) -> None:
    """v1 requires a client-chosen id (KIP-1082); v0 lets the coordinator choose one."""
    s.topic("t", 2)
    request = ConsumerGroupHeartbeatRequest(
        group_id=G,
        member_id="",
        member_epoch=0,
        rebalance_timeout_ms=5000,
        subscribed_topic_names=[s.t("t")],
        topic_partitions=[],
    )
    s.call("v1 without a member id", request, group=G, version=1)
    s.call("v0 without a member id", request, group=G, version=0)


@scenario()
def rejoin_at_epoch_zero(s: Script) -> None:
    s.topic("t", 2)
    a = ScriptedMember(s, G, "A", topics=["t"])
    a.join()
    converge(s, G, [a])
    a.beat("rejoin with owned partitions", epoch=0)
    a.beat("rejoin without owned partitions", epoch=0, topic_partitions=[])
    converge(s, G, [a])
    observe_group(s, "converged", G, [a])


@scenario()
def leave_and_rejoin(s: Script) -> None:
    s.topic("t", 4)
    a, b = ScriptedMember(s, G, "A", topics=["t"]), ScriptedMember(s, G, "B", topics=["t"])
    a.join()
    b.join()
    converge(s, G, [a, b])
    b.leave("leave")
    converge(s, G, [a])
    observe_group(s, "after the leave", G, [a])
    b.beat("heartbeat after leaving", epoch=b.epoch)
    b.join("join again")
    converge(s, G, [a, b])
    observe_group(s, "rejoined", G, [a, b])


@scenario()
def static_member_leaves_temporarily_and_returns(s: Script) -> None:
    s.topic("t", 4)
    a = ScriptedMember(s, G, "A", topics=["t"], instance_id="static-a")
    b = ScriptedMember(s, G, "B", topics=["t"], instance_id="static-b")
    a.join()
    b.join()
    converge(s, G, [a, b])
    before = b.assignment()
    b.leave("static leave (-2)", static=True)
    s.observe("group after the static leave", _brief(s))
    returning = ScriptedMember(s, G, "B again", topics=["t"], instance_id="static-b")
    returning.join("the same instance id with a new member id")
    s.observe("kept its partitions", returning.assignment() == before)
    converge(s, G, [a, returning])
    observe_group(s, "converged", G, [a, returning])


@scenario()
def a_static_member_replaced_while_alive(s: Script) -> None:
    s.topic("t", 2)
    a = ScriptedMember(s, G, "A", topics=["t"], instance_id="static")
    a.join()
    converge(s, G, [a])
    twin = ScriptedMember(s, G, "twin", topics=["t"], instance_id="static")
    twin.join("another member id takes an instance id in use")


@scenario()
def unknown_member_and_wrong_epochs(s: Script) -> None:
    s.topic("t", 2)
    a = ScriptedMember(s, G, "A", topics=["t"])
    a.join()
    converge(s, G, [a])
    stranger = ScriptedMember(s, G, "stranger", topics=["t"])
    stranger.beat("unknown member at epoch 5", epoch=5)
    a.beat("epoch ahead of the member's", epoch=a.epoch + 5)
    a.beat("epoch behind the member's", epoch=a.epoch - 1)
    a.beat("negative epoch other than -1/-2", epoch=-7)


@scenario()
def subscription_fields_checked_at_join(s: Script) -> None:
    s.topic("t", 1)
    member = ScriptedMember(s, G, "A")
    member.beat("no subscription at all")
    member.beat("empty topic list", subscribed_topic_names=[])
    member.beat("names and a regex", subscribed_topic_names=[s.t("t")], subscribed_topic_regex="t.*")
    for _ in range(10):  # the regex's resolution bumps the epoch when it comes: let it settle
        member.beat()
        time.sleep(0.1)
    member.beat("no rebalance timeout", subscribed_topic_names=[s.t("t")], rebalance_timeout_ms=-1)
    member.beat("owned partitions missing", subscribed_topic_names=[s.t("t")], topic_partitions=None)


@scenario()
def invalid_regex_and_unknown_assignor(s: Script) -> None:
    s.topic("t", 1)
    ScriptedMember(s, G, "A", regex="t[").beat("an invalid regular expression")
    b = ScriptedMember(s, G, "B", regex="(?i)t")
    b.beat("a Java-only flag")
    for _ in range(5):  # its resolution (which matches nothing) comes and goes meanwhile
        b.beat()
        time.sleep(0.1)
    s.observe("B after its regex's resolution", {"epochs": b.epochs, "owned": b.assignment()})
    ScriptedMember(s, G, "C", topics=["t"], assignor="nope").beat("an unknown server assignor")
    ScriptedMember(s, G, "D", topics=["t"], assignor="range").join("the range assignor")


@scenario()
def subscription_change(s: Script) -> None:
    s.topic("a", 2)
    s.topic("b", 2)
    m = ScriptedMember(s, G, "A", topics=["a"])
    m.join()
    converge(s, G, [m])
    m.topics = ["a", "b"]
    m.beat("subscribes to another topic")
    converge(s, G, [m])
    observe_group(s, "converged on both topics", G, [m])
    m.topics = ["b"]
    converge(s, G, [m])
    observe_group(s, "converged on the second topic", G, [m])


@scenario()
def subscribed_topic_created_later(s: Script) -> None:
    m = ScriptedMember(s, G, "A", topics=["later"])
    m.join("join before the topic exists")
    converge(s, G, [m])
    observe_group(s, "nothing to assign", G, [m])
    s.topic("later", 3)
    s.until("the new topic's partitions", lambda: (m.beat() and m.owned) or None)
    converge(s, G, [m])
    observe_group(s, "the new topic assigned", G, [m])


@scenario()
def subscribed_topic_deleted(s: Script) -> None:
    s.topic("doomed", 2)
    s.topic("stays", 2)
    m = ScriptedMember(s, G, "A", topics=["doomed", "stays"])
    m.join()
    converge(s, G, [m])
    s.delete_topic("doomed")
    s.until("the deleted topic to be revoked", lambda: (m.beat() and len(m.owned) == 1) or None)
    converge(s, G, [m])
    observe_group(s, "only the remaining topic", G, [m])


@scenario()
def regex_picks_up_a_topic_created_later(s: Script) -> None:
    s.topic("orders-eu", 1)
    s.topic("payments", 1)
    m = ScriptedMember(s, G, "A", regex="orders-.*")
    m.join()
    s.until("the regex's resolution", lambda: (m.beat() and m.owned) or None)
    converge(s, G, [m])
    observe_group(s, "the matching topic", G, [m])
    s.topic("orders-us", 2)
    s.until("the new matching topic", lambda: (m.beat() and len(m.owned) == 2) or None, timeout=45, every=0.5)
    converge(s, G, [m])
    observe_group(s, "both matching topics", G, [m])


@scenario()
def a_member_that_never_acknowledges_its_revocation(s: Script) -> None:
    """B joins; A keeps heartbeating without giving up its partitions: past A's rebalance
    timeout the coordinator removes A."""
    s.topic("t", 2)
    a = ScriptedMember(s, G, "A", topics=["t"], rebalance_timeout_ms=1000)
    a.join()
    converge(s, G, [a])
    b = ScriptedMember(s, G, "B", topics=["t"])
    b.join("B joins")
    held = dict(a.owned)
    answer = a.beat("A is asked to revoke")
    s.observe(
        "A's new assignment is smaller",
        answer.assignment is not None and len(answer.assignment.topic_partitions[0].partitions) == 1,
    )
    a.owned = held  # never acknowledges

    def fenced() -> object:
        reply = a.beat()
        a.owned = held
        b.beat()
        return reply.error_code or None

    s.observe("A's heartbeat past its rebalance timeout", s.until("A to be fenced", fenced))
    converge(s, G, [b])
    observe_group(s, "B alone", G, [b])


@scenario()
def two_members_share_partitions_cooperatively(s: Script) -> None:
    s.topic("t", 6)
    a, b, c = (ScriptedMember(s, G, n, topics=["t"]) for n in "ABC")
    a.join()
    converge(s, G, [a])
    b.join()
    converge(s, G, [a, b])
    observe_group(s, "two members", G, [a, b])
    c.join()
    converge(s, G, [a, b, c])
    observe_group(s, "three members", G, [a, b, c])


@scenario(max_group_size=2)
def group_max_size(s: Script) -> None:
    s.topic("t", 2)
    a, b, c = (ScriptedMember(s, G, n, topics=["t"]) for n in "ABC")
    a.join("first")
    b.join("second")
    c.join("third, over the maximum")


@scenario()
def describe_groups(s: Script) -> None:
    s.topic("t", 2)
    s.call("an unknown group", ConsumerGroupDescribeRequest(group_ids=["nobody"]), group="nobody")
    a = ScriptedMember(s, G, "A", topics=["t"], instance_id="i-a")
    a.join()
    converge(s, G, [a])
    s.observe("a converged group", describe(s, G))
    a.leave()
    s.until("the group to be empty", lambda: describe(s, G).groups[0].group_state == "Empty")
    s.observe("an empty group", describe(s, G))


def _brief(s: Script) -> object:
    (group,) = describe(s, G).groups
    return {
        "state": group.group_state,
        "members": sorted(s.member(m.member_id) or "" for m in group.members),
    }


def settle(seconds: float) -> None:
    time.sleep(seconds)


@scenario()
def empty_strings_and_unknown_leaves(s: Script) -> None:
    s.topic("t", 1)
    ScriptedMember(s, G, "A", topics=["t"], instance_id="").beat("an empty instance id")
    ScriptedMember(s, G, "B", topics=["t"]).beat("an empty rack id", rack_id="")
    ScriptedMember(s, "", "C", topics=["t"]).beat("an empty group id")
    a = ScriptedMember(s, G, "A2", topics=["t"])
    a.join()
    converge(s, G, [a])
    ScriptedMember(s, G, "stranger", topics=["t"]).beat("an unknown member leaves", epoch=-1)
    ScriptedMember(s, G, "ghost", topics=["t"], instance_id="nobody").beat(
        "an unknown instance id leaves for now", epoch=-2
    )
    ScriptedMember(s, G, "nameless", topics=["t"]).beat("a static leave without an instance id", epoch=-2)


@scenario(session_timeout_ms=4000)
def a_member_that_stops_heartbeating_expires(s: Script) -> None:
    """B stops heartbeating and expires; A, beating every 0.1 s, stays. (With a 2 s session a CI
    run on a loaded machine stalled long enough for Apache Kafka to expire A as well.)"""
    s.topic("t", 2)
    a, b = ScriptedMember(s, G, "A", topics=["t"]), ScriptedMember(s, G, "B", topics=["t"])
    a.join()
    b.join()
    converge(s, G, [a, b])
    deadline = time.monotonic() + 5.5  # only A heartbeats, past B's session timeout
    while time.monotonic() < deadline:
        a.beat()
        time.sleep(0.1)
    b.beat("B's heartbeat after its session expired")
    converge(s, G, [a])
    observe_group(s, "A alone", G, [a])


@scenario()
def regex_changed_to_one_matching_nothing(s: Script) -> None:
    """A member switches from a regex matching the topic to one matching nothing, while another
    member's regex keeps the topic in the group. Apache Kafka 4.4 bumps no epoch: the member's
    target keeps the partition it gave up, and nobody owns it; the reference coordinator assigns
    it to the other member (intended: `intended.INTENDED`)."""
    s.topic("t", 2)
    a = ScriptedMember(s, G, "A", regex="t.*")
    b = ScriptedMember(s, G, "B", regex="t.*")
    a.join()
    b.join()
    converge(s, G, [a, b])
    # Which member gets which partition depends on the member ids: only the shape is compared.
    shares = sorted(sum(len(parts) for parts in m.assignment().values()) for m in (a, b))
    s.observe("both on the topic", {"partitions each": shares})
    a.regex = "x.*"
    for _ in range(20):  # the new regex's resolution comes meanwhile
        a.beat()
        b.beat()
        time.sleep(0.1)
    observe_group(s, "after A's regex matches nothing", G, [a, b])
