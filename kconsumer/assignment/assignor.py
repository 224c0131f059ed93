"""Client-side partition assignors: the `PartitionAssignor` interface and the values it works with.

With ``group.local.assignors`` the group's assignment is computed by one of its members instead of
by the coordinator (docs/assignor-protocol.md; the KIP-848 seed's "Client-Side Mode"). Every member
announces its assignors and its *member metadata* (a version and opaque bytes, from `metadata()`)
in its heartbeats; the coordinator picks one member, which receives the whole group in an
`AssignmentSpec`, runs `assign()` and installs the `GroupAssignment` it returns. Each member then
gets its partitions, and `on_assignment()` once per epoch with what the assignor wrote for it.

Users work with topic *names* everywhere here; the topic ids of the wire protocol stay inside
kconsumer. A minimal assignor that gives every partition to the member with the smallest id::

    from kconsumer import GroupAssignment, MemberAssignment, PartitionAssignor

    class FirstMemberTakesAll(PartitionAssignor):
        name = "first-takes-all"

        def assign(self, spec):
            first = min(spec.members)
            everything = {t.name: range(t.num_partitions) for t in spec.topics.values()}
            return GroupAssignment(members={first: MemberAssignment(everything)})

    consumer = Consumer({..., "group.local.assignors": [FirstMemberTakesAll()]})

(That one only works when every member subscribes to every topic: a partition may only go to a
member subscribed to its topic; see `AssignmentSpec.subscribers`.) ``examples/capacity_assignor.py``
is a complete one that uses member metadata, and `kconsumer.assignors` has client-side ``range``
and ``uniform``.

Threads: `on_assignment()` runs on the application thread (inside ``poll()``), and so does
`metadata()` after ``Consumer.update_assignor_metadata()`` (it is also called once when the
consumer starts, on its background thread); `assign()` runs on a worker thread of the consumer, so
heartbeats go on while it computes. An assignor that shares state between them must lock it.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import KConsumerError
from .versions import VersionRange

__all__ = [
    "AssignmentMemberSpec",
    "AssignmentSpec",
    "AssignmentTopicMetadata",
    "AssignorError",
    "AssignorFailedError",
    "AssignorMetadata",
    "GroupAssignment",
    "GroupMetadata",
    "MemberAssignment",
    "MemberMetadata",
    "PartitionAssignor",
    "PartitionsByTopic",
    "assignor_metadata",
    "partitions_by_topic",
]

#: Partitions by topic name: each topic's partition numbers, sorted, without duplicates.
PartitionsByTopic = Mapping[str, tuple[int, ...]]

_INT8 = (-(2**7), 2**7 - 1)
_INT16 = (-(2**15), 2**15 - 1)
_INT32 = (-(2**31), 2**31 - 1)


class AssignorError(enum.IntEnum):
    """Assignment errors an assignor may report to every member (`GroupAssignment.error`), as the
    seed lists them. Any int8 is allowed; these are the conventional ones."""

    NONE = 0
    SHUTDOWN = 1
    ASSIGNMENT_ERROR = 2
    """Also what kconsumer installs when `PartitionAssignor.assign` raises (see docs/assignors.md)."""
    INCONSISTENT_TOPOLOGY = 3


class AssignorFailedError(KConsumerError):
    """`PartitionAssignor.assign` raised or returned something that is not a valid result.

    Raised from ``poll()`` of the member that computed (wrapped in a KafkaException); the
    original exception, if any, is the ``__cause__``.
    """


def _check_int(what: str, value: Any, bounds: tuple[int, int]) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an integer, got {type(value).__name__}")
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{what} must be between {bounds[0]} and {bounds[1]}, got {value}")


def _as_bytes(what: str, value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, got {type(value).__name__}")


def partitions_by_topic(
    partitions: Mapping[str, Iterable[int]] | Iterable[Any],
) -> dict[str, tuple[int, ...]]:
    """Normalize partitions to ``{topic: (sorted partitions)}`` (topics without any left out).

    Accepts a mapping of topic name to partition numbers (``{"orders": range(3)}``), or an
    iterable of ``(topic, partition)`` pairs or of objects with ``topic`` and ``partition``
    attributes (such as confluent-kafka's `TopicPartition`).

    >>> partitions_by_topic({"b": [2, 0], "a": [], "c": range(2)})
    {'b': (0, 2), 'c': (0, 1)}
    >>> partitions_by_topic([("t", 1), ("t", 0)])
    {'t': (0, 1)}
    """
    grouped: dict[str, set[int]] = {}
    if isinstance(partitions, Mapping):
        items: Iterable[tuple[Any, Any]] = (
            (topic, p) for topic, numbers in partitions.items() for p in _iterable(topic, numbers)
        )
    else:
        items = (_pair(item) for item in partitions)
    for topic, partition in items:
        if not isinstance(topic, str) or not topic:
            raise TypeError(f"topic names must be non-empty strings, got {topic!r}")
        _check_int(f"a partition of {topic!r}", partition, (0, _INT32[1]))
        grouped.setdefault(topic, set()).add(partition)
    return {topic: tuple(sorted(grouped[topic])) for topic in sorted(grouped) if grouped[topic]}


def _iterable(topic: Any, numbers: Any) -> Iterable[Any]:
    if isinstance(numbers, (str, bytes)) or not isinstance(numbers, Iterable):
        raise TypeError(f"the partitions of {topic!r} must be an iterable of integers, got {numbers!r}")
    return numbers


def _pair(item: Any) -> tuple[Any, Any]:
    if isinstance(item, tuple) and len(item) == 2:
        return item[0], item[1]
    topic, partition = getattr(item, "topic", None), getattr(item, "partition", None)
    if topic is None or partition is None:
        raise TypeError(f"expected (topic, partition) or an object with topic and partition, got {item!r}")
    return topic, partition


@dataclass(frozen=True)
class AssignorMetadata:
    """What `PartitionAssignor.metadata` returns: this member's metadata for its assignor.

    `version` must lie in the assignor's ``[minimum_version, maximum_version]``; `data` is
    opaque to kconsumer and to the coordinator. A non-zero `reason` asks for a new assignment
    (it is sent once, then goes back to 0); so does any change of `version` or `data`.

    >>> AssignorMetadata(version=1, data=b"capacity=3")
    AssignorMetadata(reason=0, version=1, data=b'capacity=3')
    """

    reason: int = 0
    version: int = 0
    data: bytes = b""

    def __post_init__(self) -> None:
        _check_int("AssignorMetadata.reason", self.reason, _INT8)
        _check_int("AssignorMetadata.version", self.version, _INT16)
        object.__setattr__(self, "data", _as_bytes("AssignorMetadata.data", self.data))


@dataclass(frozen=True)
class MemberMetadata:
    """A member's metadata as the assignor receives it: the version it was encoded with and its
    bytes. Version -1 marks metadata from a member of the classic protocol (seed, upgrade)."""

    version: int
    data: bytes = b""


@dataclass(frozen=True)
class AssignmentMemberSpec:
    """One member of the group, as the assignor sees it."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    #: Names of the topics it subscribes to (that exist).
    subscribed_topics: frozenset[str]
    #: The Reason it announced (non-zero: it asked for a new assignment).
    reason: int
    #: Its metadata for the assignor being run.
    metadata: MemberMetadata
    #: Its partitions in the current target assignment (the previous result): what a sticky
    #: assignor keeps. They may not all be owned by it yet.
    target_partitions: PartitionsByTopic = field(default_factory=dict)
    member_epoch: int = 0


@dataclass(frozen=True)
class AssignmentTopicMetadata:
    """A subscribed topic: its name and partition count."""

    name: str
    num_partitions: int


@dataclass(frozen=True)
class AssignmentSpec:
    """The group to assign, as the coordinator prepared it for one group epoch.

    `members` by member id; `topics` by name: every topic at least one member subscribes to.
    A valid assignment gives every partition of every topic in `topics` to exactly one member
    subscribed to it (the coordinator checks it and rejects anything else).
    """

    members: Mapping[str, AssignmentMemberSpec]
    topics: Mapping[str, AssignmentTopicMetadata]
    group_id: str = ""
    group_epoch: int = 0
    #: The name of the assignor being run (one of this member's local assignors).
    assignor_name: str = ""

    def subscribers(self, topic: str) -> list[str]:
        """The ids of the members subscribed to `topic`, sorted."""
        return sorted(m for m, spec in self.members.items() if topic in spec.subscribed_topics)


@dataclass(frozen=True, init=False)
class MemberAssignment:
    """What the assignor gives one member, and what that member receives in `on_assignment`.

    `partitions` accepts anything `partitions_by_topic` does and is stored normalized.
    `data` is the *assignment metadata* the member will get; `version` its encoding version,
    by default (None) the version of the member's own metadata.

    >>> MemberAssignment({"orders": [3, 1]}, b"note")
    MemberAssignment(partitions={'orders': (1, 3)}, data=b'note', version=None)
    """

    partitions: PartitionsByTopic
    data: bytes
    version: int | None

    def __init__(
        self,
        partitions: Mapping[str, Iterable[int]] | Iterable[Any] = (),
        data: bytes = b"",
        version: int | None = None,
    ) -> None:
        object.__setattr__(self, "partitions", partitions_by_topic(partitions))
        object.__setattr__(self, "data", _as_bytes("MemberAssignment.data", data))
        if version is not None:
            _check_int("MemberAssignment.version", version, _INT16)
        object.__setattr__(self, "version", version)

    @property
    def count(self) -> int:
        """How many partitions in all."""
        return sum(len(p) for p in self.partitions.values())


@dataclass(frozen=True)
class GroupAssignment:
    """What `PartitionAssignor.assign` returns: an `error` for every member (0: none; see
    `AssignorError`) and the assignment of each member by member id. Members left out get
    no partitions."""

    error: int = 0
    members: Mapping[str, MemberAssignment] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check_int("GroupAssignment.error", self.error, _INT8)
        for member_id, assignment in self.members.items():
            if not isinstance(member_id, str) or not isinstance(assignment, MemberAssignment):
                raise TypeError(
                    f"GroupAssignment.members maps member ids to MemberAssignment, got {member_id!r}: "
                    f"{type(assignment).__name__}"
                )


@dataclass(frozen=True)
class GroupMetadata:
    """The member receiving `on_assignment`: its group, member id and epoch."""

    group_id: str
    member_id: str
    member_epoch: int
    group_instance_id: str | None = None


class PartitionAssignor(abc.ABC):
    """A client-side assignor; configure instances (or ``"module:Class"`` strings) in
    ``group.local.assignors``, most preferred first; with ``group.protocol=classic`` in
    ``partition.assignment.strategy`` (beside or instead of the built-in names), where the group's
    leader runs it over the members' subscriptions (`AssignmentSpec.members` then carry version -1
    metadata with the members' user data, and `target_partitions` what each reports owning).

    Subclasses set `name` (unique in the group; every member must list an assignor of that name
    for it to be used, docs/assignor-protocol.md §5), the range of metadata versions they read, and
    implement `assign`. The coordinator asks a member whose range covers every member's
    metadata version.
    """

    #: Unique name of the assignor.
    name: str
    #: Lowest metadata version this assignor reads (-1 for classic-protocol members' metadata).
    minimum_version: int = 0
    #: Highest metadata version this assignor reads.
    maximum_version: int = 0
    #: With ``group.protocol=classic`` (in ``partition.assignment.strategy``): ``"eager"`` (every
    #: member gives up all its partitions before each rebalance) or ``"cooperative"`` (KIP-429:
    #: members keep what stays theirs; a partition another member still reports owning is left out
    #: of its new owner's assignment until a follow-up rebalance, whatever `assign` returns).
    rebalance_protocol: str = "eager"

    def metadata(self) -> AssignorMetadata:
        """This member's metadata, announced when it joins and again after
        ``Consumer.update_assignor_metadata``. By default: version `maximum_version`, no bytes."""
        return AssignorMetadata(version=self.maximum_version)

    @abc.abstractmethod
    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        """The group's new assignment, computed from `spec`.

        Called on a worker thread of the member the coordinator chose. It should be a pure
        function of `spec`. If it raises, the consumer reports the error from ``poll()`` and
        installs no new partitions (see docs/assignors.md).
        """

    def on_assignment(self, error: int, assignment: MemberAssignment, group_metadata: GroupMetadata) -> None:
        """This member's new assignment, once per epoch, on the application thread, before
        ``on_partitions_assigned``. `assignment` is its *target*: some partitions may still be
        held by other members (the rebalance listener says when they arrive); its `data` and
        `version` are what the assignor wrote for this member, `error` the assignor's error."""
        del error, assignment, group_metadata

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={getattr(self, 'name', None)!r})"


def assignor_metadata(assignor: Any) -> AssignorMetadata:
    """``assignor.metadata()``, checked: an `AssignorMetadata` whose version lies in the
    assignor's range. An object without a ``metadata`` method gets the default (version
    ``maximum_version``, no bytes). Raises TypeError or ValueError naming the problem."""
    method = getattr(assignor, "metadata", None)
    meta = method() if callable(method) else AssignorMetadata(version=assignor.maximum_version)
    if not isinstance(meta, AssignorMetadata):
        raise TypeError(f"metadata() must return an AssignorMetadata, got {type(meta).__name__}")
    versions = VersionRange(assignor.minimum_version, assignor.maximum_version)
    if not versions.covers(meta.version):
        raise ValueError(f"metadata version {meta.version} is outside the assignor's range {versions}")
    return meta
