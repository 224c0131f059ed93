"""The requests the member session sends, as typed calls: what each is for (the answer's recipient)
and how it is built once the broker's API versions are known.

A call is data. `MemberSession` routes an answer by the call's type (one handler per type), so a
request id never has to be compared against a list of what might be waiting for it. Building is
the only behaviour here: the version is negotiated with the broker's ApiVersions (`common_version`)
and recorded on the call, because some answers are read differently per version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from ...protocol.api import ApiKey
from ...protocol.messages.classic_group import LeaveGroupRequest
from ...protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest
from ...protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
)
from ...protocol.negotiation import BrokerVersions, NoCommonVersionError, common_version
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from .admin_requests import api_versions_request
from .cluster import ClusterView, Key
from .effects import ClassicApi, Node, SendClassicRequest
from .model import PartitionOffset, TopicIdPartition
from .offset_requests import (
    BY_ID_VERSION,
    COMMIT_MIN_VERSION,
    REQUIRE_STABLE_VERSION,
    commit_request,
    fetch_request,
)


@dataclass
class Call:
    """A request to send. `version` is set when it is built."""

    #: The call goes to the group coordinator (found and negotiated first).
    to_coordinator: ClassVar[bool] = False
    version: int = field(default=-1, init=False)

    def build(self, versions: BrokerVersions) -> Message:
        """The request at the highest common version (recorded in `version`); raises
        NoCommonVersionError when the broker cannot take it."""
        request, self.version = self._build(versions)
        return request

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        raise NotImplementedError

    def timeout_ms(self) -> int | None:
        """How long its answer may take, when longer than ``request.timeout.ms`` (None)."""
        return None


@dataclass
class ApiVersionsCall(Call):
    """What a broker implements (the session asks each new connection)."""

    node: Node
    try_version: int
    software_version: str

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        return api_versions_request(self.software_version), self.try_version


@dataclass
class AnyBrokerCall(Call):
    """A call any broker can answer; it moves to another one when a connection fails."""

    tried: set[Node] = field(default_factory=set, init=False)


@dataclass
class FindCoordinatorCall(AnyBrokerCall):
    """Which broker coordinates the group."""

    group_id: str

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        version = common_version(ApiKey.FIND_COORDINATOR, versions)
        return ClusterView.find_coordinator_request(version, self.group_id), version


@dataclass
class MetadataCall(AnyBrokerCall):
    """Metadata of topics by name and/or id (both None: every topic), for `purpose`."""

    topics: tuple[str, ...] | None
    topic_ids: tuple[Uuid, ...] | None
    purpose: Purpose

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        version = common_version(ApiKey.METADATA, versions)
        return ClusterView.metadata_request(version, self.topics, self.topic_ids), version


@dataclass(frozen=True)
class ForCore:
    """A metadata refresh the member core asked for."""


@dataclass(frozen=True)
class ForAssignment:
    """Topic names a client-side assignment needs (`run_id`)."""

    run_id: int


@dataclass(frozen=True)
class ForQuery:
    """Topic ids or leaders an application query (`token`) needs."""

    token: int


#: LeaveGroup names the members in a batch from v3 (before: one MemberId).
LEAVE_BATCH_VERSION = 3

#: The API key and the highest version kconsumer sends of each classic request: the versions
#: librdkafka's classic consumer sends (JoinGroup v5 has static membership and MEMBER_ID_REQUIRED;
#: v6-v8 add nothing a consumer uses). librdkafka's mock cluster advertises JoinGroup v6 but
#: cannot parse it (its flexible encoding): the cap keeps kconsumer working there.
_APIS: Mapping[ClassicApi, tuple[ApiKey, int]] = {
    ClassicApi.JOIN: (ApiKey.JOIN_GROUP, 5),
    ClassicApi.SYNC: (ApiKey.SYNC_GROUP, 3),
    ClassicApi.HEARTBEAT: (ApiKey.HEARTBEAT, 3),
    ClassicApi.LEAVE: (ApiKey.LEAVE_GROUP, 1),
    ClassicApi.DESCRIBE: (ApiKey.DESCRIBE_GROUPS, 5),
}

#: JoinGroup v9 (KIP-814) tells a static leader that rejoined without a rebalance that it leads,
#: with the members (`skip_assignment`): sent to brokers that offer it.
SKIP_ASSIGNMENT_VERSION = 9


@dataclass
class ClassicCall(Call):
    """A classic group request of the core (`core_id`)."""

    to_coordinator: ClassVar[bool] = True
    core_id: int
    api: ClassicApi
    request: Message
    wait_ms: int | None = None

    def timeout_ms(self) -> int | None:
        """JoinGroup and SyncGroup wait for the other members."""
        return self.wait_ms

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        api_key, highest = _APIS[self.api]
        if self.api is ClassicApi.JOIN and versions.get(api_key, (0, 0))[1] >= SKIP_ASSIGNMENT_VERSION:
            highest = SKIP_ASSIGNMENT_VERSION
        version = common_version(api_key, versions, highest)
        request = self.request
        if isinstance(request, LeaveGroupRequest) and version < LEAVE_BATCH_VERSION:
            request = request.replace(member_id=request.members[0].member_id, members=[])
        return request, version


@dataclass(frozen=True)
class ForClassic:
    """Metadata a classic request needs: the leader's partition counts (`effect`), or the topic
    ids of a SyncGroup answer (`names`, with the answer's `user_data`)."""

    core_id: int
    effect: SendClassicRequest | None = None
    names: Mapping[str, list[int]] = field(default_factory=dict)
    user_data: bytes = b""
    #: After a skipped assignment: the members' subscribed topics and what the group's
    #: assignment covers; a partition of those topics it leaves out, or gives out though it no
    #: longer exists, makes the leader rejoin.
    check: tuple[frozenset[str], frozenset[tuple[str, int]]] | None = None
    #: A JoinGroup waiting for the ids of its subscribed topics (`SendClassicRequest.unknown_topics`).
    join: SendClassicRequest | None = None


Purpose = ForCore | ForAssignment | ForQuery | ForClassic


@dataclass
class ListOffsetsCall(Call):
    """Offsets at timestamps, asked of one partition leader for query `token`."""

    token: int
    timestamps: Mapping[Key, int]
    isolation_level: int

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        version = common_version(ApiKey.LIST_OFFSETS, versions)
        return ClusterView.list_offsets_request(self.timestamps, self.isolation_level), version


@dataclass
class HeartbeatCall(Call):
    """The core's heartbeat `core_id`, at most at the version the core built it for."""

    to_coordinator: ClassVar[bool] = True
    core_id: int
    request: ConsumerGroupHeartbeatRequest
    max_version: int
    leave: bool

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        version = common_version(ApiKey.CONSUMER_GROUP_HEARTBEAT, versions, self.max_version)
        return self.request, version


@dataclass
class CommitCall(Call):
    """An OffsetCommit (v9+, by topic id from v10): the core's `core_id` (member id and epoch),
    or the application's manual-assignment commit `token` (no member id, epoch -1)."""

    to_coordinator: ClassVar[bool] = True
    core_id: int | None
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    offsets: tuple[PartitionOffset, ...]
    token: int | None = None

    def follow(self, member_id: str, member_epoch: int, owned: frozenset[tuple[Uuid, int]]) -> None:
        """Carry the member's epoch of the moment it is sent, as Kafka's consumer does: the epoch
        may have moved on while the application read the positions or the call waited for the
        coordinator (an older one is refused STALE_MEMBER_EPOCH). Only while the member still
        owns every partition of it: otherwise the refusal makes the member send it again
        without those (the coordinator checks the epoch, not who owns a partition)."""
        if member_id != self.member_id or not member_epoch > self.member_epoch > 0:
            return
        if all(o.partition.key in owned for o in self.offsets):
            self.member_epoch = member_epoch

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        version = common_version(ApiKey.OFFSET_COMMIT, versions, BY_ID_VERSION)
        if version < COMMIT_MIN_VERSION:
            raise NoCommonVersionError(
                ApiKey.OFFSET_COMMIT,
                f"the coordinator offers OffsetCommit up to v{version} only (v9+ needed)",
            )
        request = commit_request(
            version, self.group_id, self.member_id, self.member_epoch, self.instance_id, self.offsets
        )
        return request, version


@dataclass
class OffsetFetchCall(Call):
    """An OffsetFetch: the core's `core_id` (with member id and epoch), or the application's
    query `token` (no member id, epoch -1: it works from any state)."""

    to_coordinator: ClassVar[bool] = True
    group_id: str
    member_id: str | None
    member_epoch: int
    partitions: tuple[TopicIdPartition, ...]
    core_id: int | None = None
    token: int | None = None
    #: Ask for stable offsets (read_committed members: UNSTABLE_OFFSET_COMMIT while pending).
    require_stable: bool = False

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        version = common_version(ApiKey.OFFSET_FETCH, versions, BY_ID_VERSION)
        request = fetch_request(version, self.group_id, self.member_id, self.member_epoch, self.partitions)
        request.require_stable = self.require_stable and version >= REQUIRE_STABLE_VERSION
        return request, version


@dataclass
class PrepareCall(Call):
    """ConsumerGroupPrepareAssignment of the client-side assignment `run_id`."""

    to_coordinator: ClassVar[bool] = True
    run_id: int
    request: ConsumerGroupPrepareAssignmentRequest

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        return self.request, common_version(ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT, versions)


@dataclass
class InstallCall(Call):
    """ConsumerGroupInstallAssignment of the client-side assignment `run_id`."""

    to_coordinator: ClassVar[bool] = True
    run_id: int
    request: ConsumerGroupInstallAssignmentRequest

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        return self.request, common_version(ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT, versions)
