"""What ``kconsumer groups`` shows: groups, members and per-partition lag, built from the brokers'
answers (pure; `admin.GroupAdmin` fetches, `render` prints)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..assignment.work_units import WorkUnits
from ..errors import ProtocolError
from ..protocol.consumer_protocol import ConsumerAssignment, decode_consumer_protocol
from ..protocol.messages.classic_group import DescribedGroup as ClassicDescribedGroup
from ..protocol.messages.consumer_group import DescribedAssignment
from ..protocol.messages.consumer_group import DescribedGroup as ConsumerDescribedGroup
from ..protocol.messages.worker_group import decode_units

#: The group type of worker groups (docs/worker-protocol.md).
CONNECT_GROUP_TYPE = "connect"

Key = tuple[str, int]


@dataclass(frozen=True)
class GroupListing:
    """One group of ``groups list``."""

    group_id: str
    group_type: str
    state: str
    protocol_type: str


@dataclass(frozen=True)
class MemberView:
    """One member: who it is and what it owns (`target`: what the coordinator wants it to own,
    consumer-protocol members only; `member_epoch` is None for classic members)."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rack_id: str | None
    member_epoch: int | None
    assignment: tuple[Key, ...]
    target: tuple[Key, ...] | None
    subscription: tuple[str, ...] = ()
    subscribed_regex: str | None = None
    #: A worker's connectors and tasks (worker groups, type ``connect``).
    units: tuple[str, ...] = ()


@dataclass(frozen=True)
class GroupView:
    """A described group (`group_epoch` and `assignment_epoch` are None for classic groups)."""

    group_id: str
    group_type: str
    state: str
    group_epoch: int | None
    assignment_epoch: int | None
    assignor: str
    members: tuple[MemberView, ...] = field(default_factory=tuple)

    def owners(self) -> dict[Key, MemberView]:
        """The member owning each assigned partition."""
        return {key: member for member in self.members for key in member.assignment}

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (partition keys as ``{"topic", "partition"}``)."""
        data = asdict(self)
        for member in data["members"]:
            for name in ("assignment", "target"):
                if member[name] is not None:
                    member[name] = [{"topic": t, "partition": p} for t, p in member[name]]
            member["subscription"] = list(member["subscription"])
        return data


@dataclass(frozen=True)
class PartitionLag:
    """One partition of ``groups describe --offsets``: committed offset, log end and lag
    (None where unknown), and its owner."""

    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    owner: MemberView | None

    @property
    def lag(self) -> int | None:
        """Log end minus committed offset (None when either is unknown)."""
        if self.committed is None or self.log_end is None:
            return None
        return max(0, self.log_end - self.committed)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (the owner as member id, client id and host)."""
        return {
            "topic": self.topic,
            "partition": self.partition,
            "committed": self.committed,
            "log_end": self.log_end,
            "lag": self.lag,
            "member_id": None if self.owner is None else self.owner.member_id,
            "client_id": None if self.owner is None else self.owner.client_id,
            "host": None if self.owner is None else self.owner.client_host,
        }


def consumer_view(described: ConsumerDescribedGroup) -> GroupView:
    """A consumer group from its ConsumerGroupDescribe entry."""
    members = tuple(
        MemberView(
            member_id=m.member_id,
            instance_id=m.instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rack_id=m.rack_id,
            member_epoch=m.member_epoch,
            assignment=_keys(m.assignment),
            target=_keys(m.target_assignment),
            subscription=tuple(sorted(m.subscribed_topic_names)),
            subscribed_regex=m.subscribed_topic_regex,
        )
        for m in sorted(described.members, key=lambda m: m.member_id)
    )
    return GroupView(
        group_id=described.group_id,
        group_type="consumer",
        state=described.group_state,
        group_epoch=described.group_epoch,
        assignment_epoch=described.assignment_epoch,
        assignor=described.assignor_name,
        members=members,
    )


def classic_view(described: ClassicDescribedGroup) -> GroupView:
    """A classic group from its DescribeGroups entry (assignments decoded when the protocol
    type is ``consumer``; other protocols' bytes are opaque), or a worker group's (protocol type
    ``connect``: each worker's units)."""
    workers = described.protocol_type == CONNECT_GROUP_TYPE and described.group_state != "Dead"
    consumers = described.protocol_type == "consumer"
    members = tuple(
        MemberView(
            member_id=m.member_id,
            instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rack_id=None,
            member_epoch=None,
            assignment=_partitions(m.member_assignment) if consumers else (),
            target=None,
            units=_units(m.member_assignment) if workers else (),
        )
        for m in sorted(described.members, key=lambda m: m.member_id)
    )
    return GroupView(
        group_id=described.group_id,
        group_type=CONNECT_GROUP_TYPE if workers else "classic",
        state=described.group_state,
        group_epoch=None,
        assignment_epoch=None,
        assignor=described.protocol_data,
        members=members,
    )


def _partitions(assignment: bytes) -> tuple[Key, ...]:
    """A consumer's SyncGroup assignment as sorted (topic, partition) pairs (none if malformed)."""
    if not assignment:
        return ()
    try:
        decoded = decode_consumer_protocol(ConsumerAssignment, assignment)[0]
    except ProtocolError:
        return ()
    return tuple(sorted((entry.topic, p) for entry in decoded.assigned_partitions for p in entry.partitions))


def _units(assignment: bytes) -> tuple[str, ...]:
    """A worker's units as DescribeGroups carries them (none if malformed)."""
    try:
        return tuple(WorkUnits.from_wire(decode_units(assignment)))
    except ProtocolError:
        return ()


def lag_rows(
    view: GroupView | None, committed: Mapping[Key, int], log_ends: Mapping[Key, int]
) -> list[PartitionLag]:
    """One row per partition the group has an offset for or assigns, sorted."""
    owners = view.owners() if view is not None else {}
    keys = sorted(set(committed) | set(owners))
    return [
        PartitionLag(key[0], key[1], committed.get(key), log_ends.get(key), owners.get(key)) for key in keys
    ]


def _keys(assignment: DescribedAssignment) -> tuple[Key, ...]:
    return tuple(sorted((t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions))
