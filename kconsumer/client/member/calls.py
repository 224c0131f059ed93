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
from ...protocol.messages.api_versions import ApiVersionsRequest
from ...protocol.messages.consumer_group import ConsumerGroupHeartbeatRequest
from ...protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
)
from ...protocol.negotiation import BrokerVersions, NoCommonVersionError, common_version
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from .cluster import ClusterView, Key
from .effects import Node
from .model import PartitionOffset, TopicIdPartition
from .offset_requests import BY_ID_VERSION, COMMIT_MIN_VERSION, commit_request, fetch_request


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


@dataclass
class ApiVersionsCall(Call):
    """What a broker implements (the session asks each new connection)."""

    node: Node
    try_version: int
    software_version: str

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        request = ApiVersionsRequest(
            client_software_name="kconsumer", client_software_version=self.software_version
        )
        return request, self.try_version


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


Purpose = ForCore | ForAssignment | ForQuery


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

    def _build(self, versions: BrokerVersions) -> tuple[Message, int]:
        version = common_version(ApiKey.OFFSET_FETCH, versions, BY_ID_VERSION)
        request = fetch_request(version, self.group_id, self.member_id, self.member_epoch, self.partitions)
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
