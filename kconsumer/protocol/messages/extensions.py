"""kconsumer's client-side-assignor APIs (docs/assignor-protocol.md §2-§4), served only by the
reference coordinator.

ConsumerGroupPrepareAssignment (32000) gives the chosen member the group state to assign;
ConsumerGroupInstallAssignment (32001) installs what its assignor computed. Both are flexible
from v0 (request header v2, response header v1).
"""

from __future__ import annotations

from ..schema import Message, Struct, field
from ..types import BYTES, INT8, INT16, INT32, STRING, UUID, Array
from ..uuid import Uuid
from .consumer_group import TopicPartitions

#: Advertised in ApiVersions by the reference coordinator only.
PREPARE_ASSIGNMENT_API_KEY = 32000
INSTALL_ASSIGNMENT_API_KEY = 32001


class ConsumerGroupPrepareAssignmentRequest(Message, api_key=32000, valid="0", flexible="0+"):
    group_id: str = field(STRING, "0+")
    member_id: str = field(STRING, "0+")
    member_epoch: int = field(INT32, "0+")


class MemberAssignorState(Struct):
    """A member's metadata for the selected assignor."""

    reason: int = field(INT8, "0+")
    metadata_version: int = field(INT16, "0+")
    metadata_bytes: bytes = field(BYTES, "0+")


class PreparedMember(Struct):
    member_id: str = field(STRING, "0+")
    member_epoch: int = field(INT32, "0+")
    instance_id: str | None = field(STRING, "0+", nullable="0+", default=None)
    rack_id: str | None = field(STRING, "0+", nullable="0+", default=None)
    subscribed_topic_ids: list[Uuid] = field(Array(UUID), "0+")
    assignor: MemberAssignorState = field(MemberAssignorState, "0+")
    topic_partitions: list[TopicPartitions] = field(Array(TopicPartitions), "0+")


class PreparedTopic(Struct):
    topic_id: Uuid = field(UUID, "0+")
    topic_name: str = field(STRING, "0+")
    num_partitions: int = field(INT32, "0+")


class ConsumerGroupPrepareAssignmentResponse(Message, api_key=32000, valid="0", flexible="0+"):
    throttle_time_ms: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")
    error_message: str | None = field(STRING, "0+", nullable="0+", default=None)
    group_epoch: int = field(INT32, "0+")
    assignor_name: str = field(STRING, "0+")
    members: list[PreparedMember] = field(Array(PreparedMember), "0+")
    topics: list[PreparedTopic] = field(Array(PreparedTopic), "0+")


class InstalledMember(Struct):
    member_id: str = field(STRING, "0+")
    topic_partitions: list[TopicPartitions] = field(Array(TopicPartitions), "0+")
    metadata_version: int = field(INT16, "0+")
    metadata_bytes: bytes = field(BYTES, "0+")


class ConsumerGroupInstallAssignmentRequest(Message, api_key=32001, valid="0", flexible="0+"):
    group_id: str = field(STRING, "0+")
    member_id: str = field(STRING, "0+")
    member_epoch: int = field(INT32, "0+")
    group_epoch: int = field(INT32, "0+")
    error: int = field(INT8, "0+")
    members: list[InstalledMember] = field(Array(InstalledMember), "0+")


class ConsumerGroupInstallAssignmentResponse(Message, api_key=32001, valid="0", flexible="0+"):
    throttle_time_ms: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")
    error_message: str | None = field(STRING, "0+", nullable="0+", default=None)
