"""The member session's side of the classic group requests (`SendClassicRequest`): what it must
fetch or compute before it can send them, and how their answers become events for the core.

* A leader's SyncGroup needs the subscribed topics' partition counts: Metadata first, then the
  assignments (`assignment.classic_leader`), then the request.
* A SyncGroup answer names topics; the core works by topic id: the names are resolved after a
  Metadata request for them (the ids of a topic deleted and created again under its name
  change). The core hears of the names (`MetadataUpdated`) before the answer, so it reconciles
  without another round trip.
* A LeaveGroup a static member does not send is answered at once.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from ...assignment.classic_leader import assigned_partitions, classic_assignments, subscribed_topics
from ...errors import ErrorCode
from ...protocol.messages.classic_group import (
    JoinGroupResponse,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from . import events as ev
from .calls import AnyBrokerCall, Call, ClassicCall, ForClassic, MetadataCall
from .cluster import ClusterView
from .effects import ClassicApi, SendClassicRequest
from .model import ClassicMember

log = logging.getLogger("kconsumer")


@dataclass
class ClassicStep:
    """What the session does next: requests, and events for the core (in order)."""

    to_coordinator: list[Call] = field(default_factory=list)
    to_any: list[AnyBrokerCall] = field(default_factory=list)
    events: list[ev.Event] = field(default_factory=list)


def start(effect: SendClassicRequest) -> ClassicStep:
    """Carry out `effect`."""
    if effect.request is None:  # a static member's leave: nothing to send
        return ClassicStep(events=[ev.ClassicResponseReceived(effect.request_id)])
    if effect.api is ClassicApi.SYNC and effect.members:
        topics = tuple(sorted(subscribed_topics(_joined(effect.members))))
        metadata = MetadataCall(topics, None, ForClassic(effect.request_id, effect=effect))
        return ClassicStep(to_any=[metadata])
    call = ClassicCall(effect.request_id, effect.api, effect.request, effect.timeout_ms)
    return ClassicStep(to_coordinator=[call])


def metadata_learnt(purpose: ForClassic, cluster: ClusterView, failed: bool = False) -> ClassicStep:
    """The Metadata `purpose` asked for arrived, or failed: the leader then assigns with the
    partition counts it knows, but assigned names are only turned into topic ids with fresh
    metadata (a topic created again under its name has a new id; an old one would never be
    found again), so that request is sent again."""
    effect = purpose.effect
    if failed and effect is None:
        return ClassicStep(to_any=[MetadataCall(tuple(sorted(purpose.names)), None, purpose)])
    if effect is not None:
        assert isinstance(effect.request, SyncGroupRequest)
        assignments = classic_assignments(effect.strategy, _joined(effect.members), cluster.partition_counts)
        request = effect.request.replace(
            assignments=[
                SyncGroupRequestAssignment(member_id=member_id, assignment=data)
                for member_id, data in assignments.items()
            ]
        )
        call = ClassicCall(purpose.core_id, ClassicApi.SYNC, request, effect.timeout_ms)
        return ClassicStep(to_coordinator=[call])
    return _synced(purpose.core_id, purpose.names, cluster)


def answered(call: ClassicCall, response: Message, cluster: ClusterView) -> ClassicStep:
    """The coordinator answered `call`."""
    code = ErrorCode.of(getattr(response, "error_code", 0))
    if isinstance(response, JoinGroupResponse):
        members = tuple(ClassicMember(m.member_id, m.group_instance_id, m.metadata) for m in response.members)
        event = ev.ClassicResponseReceived(
            call.core_id,
            code,
            member_id=response.member_id,
            generation=response.generation_id,
            protocol_name=response.protocol_name,
            leader_id=response.leader,
            members=members,
        )
        return ClassicStep(events=[event])
    if isinstance(response, SyncGroupResponse) and code is ErrorCode.NONE:
        try:
            names = assigned_partitions(response.assignment)
        except Exception as exc:
            log.warning("the group leader's assignment does not decode (%s): rejoining", exc)
            return ClassicStep(
                events=[ev.ClassicResponseReceived(call.core_id, ErrorCode.REBALANCE_IN_PROGRESS)]
            )
        if not names:
            return _synced(call.core_id, names, cluster)
        # Fresh ids for the names: a topic deleted and created again under its name has a new id.
        topics = tuple(sorted(names))
        return ClassicStep(to_any=[MetadataCall(topics, None, ForClassic(call.core_id, names=names))])
    return ClassicStep(events=[ev.ClassicResponseReceived(call.core_id, code)])


def _synced(core_id: int, names: Mapping[str, list[int]], cluster: ClusterView) -> ClassicStep:
    assignment: dict[Uuid, tuple[int, ...]] = {}
    for name, partitions in names.items():
        topic_id = cluster.topic_ids.get(name)
        if topic_id is None:
            log.warning("assigned topic %s is unknown to the cluster: left out", name)
            continue
        # A topic created again under its name may have fewer partitions than the one assigned.
        count = cluster.partition_counts.get(name, 0)
        assignment[topic_id] = tuple(p for p in partitions if p < count)
    return ClassicStep(
        events=[
            ev.MetadataUpdated(dict(cluster.topic_names), dict(cluster.partition_counts)),
            ev.ClassicResponseReceived(core_id, assignment=assignment),
        ]
    )


def _joined(members: tuple[ClassicMember, ...]) -> list[tuple[str, str | None, bytes]]:
    return [(m.member_id, m.instance_id, m.metadata) for m in members]


__all__ = ["ClassicStep", "answered", "metadata_learnt", "start"]
