"""The member core's ``on_assignment``: once per epoch, with the member's whole target (the
partitions it may use now and those still pending release by other members, as the seed says:
"contains partitions that are not revoked yet"), before ``on_partitions_assigned``."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "member"))

from member_driver import TOPIC_IDS, Driver, response, tps

from kconsumer.assignment.announcements import AnnouncedAssignor, AssignorOutput
from kconsumer.client.member import CallbackKind
from kconsumer.client.member.effects import InvokeCallback, RefreshMetadata
from kconsumer.client.member.events import HeartbeatResponseReceived, Subscribe
from kconsumer.protocol.messages.consumer_group import TopicPartitions

META = AssignorOutput(0, 1, b"for-me")


def driver() -> Driver:
    d = Driver(client_assignors=(AnnouncedAssignor("sticky", 0, 1, 1),))
    d.send(Subscribe(topics=("foo", "bar"), callbacks=frozenset(CallbackKind)))
    return d


def respond(d: Driver, epoch: int, assigned: dict[str, list[int]], pending: dict[str, list[int]]) -> list:
    hb = d.in_flight()
    d.answered.add(hb.request_id)
    wire = response(epoch, assigned, metadata=META)
    wire.pending_topic_partitions = [
        TopicPartitions(topic_id=TOPIC_IDS[t], partitions=p) for t, p in pending.items()
    ]
    return d.send(HeartbeatResponseReceived(hb.request_id, wire))


def callbacks(d: Driver) -> list[tuple[CallbackKind, tuple]]:
    return [(cb.kind, cb.partitions) for cb in d.of(InvokeCallback, d.all)]


def test_on_assignment_sees_the_pending_partitions_too() -> None:
    d = driver()
    d.metadata()
    respond(d, 2, {"foo": [0]}, {"foo": [1, 2]})
    assert callbacks(d)[-1] == (CallbackKind.ASSIGNMENT, tps({"foo": [0, 1, 2]}))
    d.complete_callbacks()
    assert callbacks(d)[-1] == (CallbackKind.ASSIGNED, tps({"foo": [0]}))


def test_on_assignment_waits_for_the_names_of_pending_topics() -> None:
    d = driver()
    d.metadata("foo")
    effects = respond(d, 2, {"foo": [0]}, {"bar": [3]})
    assert TOPIC_IDS["bar"] in d.one(RefreshMetadata, effects).topic_ids
    assert not d.of(InvokeCallback, effects)
    d.metadata("bar")
    assert callbacks(d)[-1] == (CallbackKind.ASSIGNMENT, tps({"foo": [0], "bar": [3]}))


def test_once_per_epoch_when_the_pending_partitions_arrive() -> None:
    d = driver()
    d.metadata()
    respond(d, 2, {"foo": [0]}, {"foo": [1]})
    d.settle()
    d.run_until_idle(10_000)
    respond(d, 2, {"foo": [0, 1]}, {})
    d.settle()
    assert callbacks(d)[-1] == (CallbackKind.ASSIGNED, tps({"foo": [1]}))
    d.run_until_idle(10_000)
    respond(d, 3, {"foo": [0, 1]}, {})
    kinds = [kind for kind, _ in callbacks(d)]
    assert kinds.count(CallbackKind.ASSIGNMENT) == 2  # epochs 2 and 3, not for the second response of 2
