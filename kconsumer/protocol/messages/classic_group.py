"""The classic group protocol: JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14) and
DescribeGroups (15), every version Kafka 4.1+ accepts.

The protocol bytes (`metadata`, `assignment`) are opaque to the coordinator; consumers put Kafka's
ConsumerProtocol subscription and assignment in them (`kconsumer.protocol.consumer_protocol`).
"""

from __future__ import annotations

from ..schema import Message, Struct, field
from ..types import BOOL, BYTES, INT16, INT32, STRING, Array

#: JoinGroupResponse.ProtocolName is nullable from v7.
NULLABLE_PROTOCOL_NAME_VERSION = 7


class JoinGroupRequestProtocol(Struct):
    name: str = field(STRING, "0+")
    metadata: bytes = field(BYTES, "0+")


class JoinGroupRequest(Message, api_key=11, valid="0-9", flexible="6+"):
    group_id: str = field(STRING, "0+")
    session_timeout_ms: int = field(INT32, "0+")
    rebalance_timeout_ms: int = field(INT32, "1+", default=-1, ignorable=True)
    member_id: str = field(STRING, "0+")
    group_instance_id: str | None = field(STRING, "5+", nullable="5+", default=None)
    protocol_type: str = field(STRING, "0+")
    protocols: list[JoinGroupRequestProtocol] = field(Array(JoinGroupRequestProtocol), "0+")
    reason: str | None = field(STRING, "8+", nullable="8+", default=None, ignorable=True)


class JoinGroupResponseMember(Struct):
    member_id: str = field(STRING, "0+")
    group_instance_id: str | None = field(STRING, "5+", nullable="5+", default=None, ignorable=True)
    metadata: bytes = field(BYTES, "0+")


class JoinGroupResponse(Message, api_key=11, valid="0-9", flexible="6+"):
    throttle_time_ms: int = field(INT32, "2+", default=0, ignorable=True)
    error_code: int = field(INT16, "0+", default=0)
    generation_id: int = field(INT32, "0+", default=-1)
    protocol_type: str | None = field(STRING, "7+", nullable="7+", default=None, ignorable=True)
    protocol_name: str | None = field(STRING, "0+", nullable="7+", default="")
    leader: str = field(STRING, "0+", default="")
    skip_assignment: bool = field(BOOL, "9+", default=False)
    member_id: str = field(STRING, "0+", default="")
    members: list[JoinGroupResponseMember] = field(Array(JoinGroupResponseMember), "0+", default=[])

    def encode(self, version: int) -> bytes:
        """As Kafka's JoinGroupResponse: a null protocol name is sent as "" before v7."""
        if version < NULLABLE_PROTOCOL_NAME_VERSION and self.protocol_name is None:
            return self.replace(protocol_name="").encode(version)
        return super().encode(version)


class HeartbeatRequest(Message, api_key=12, valid="0-4", flexible="4+"):
    group_id: str = field(STRING, "0+")
    generation_id: int = field(INT32, "0+")
    member_id: str = field(STRING, "0+")
    group_instance_id: str | None = field(STRING, "3+", nullable="3+", default=None)


class HeartbeatResponse(Message, api_key=12, valid="0-4", flexible="4+"):
    throttle_time_ms: int = field(INT32, "1+", default=0, ignorable=True)
    error_code: int = field(INT16, "0+", default=0)


class MemberIdentity(Struct):
    member_id: str = field(STRING, "3+")
    group_instance_id: str | None = field(STRING, "3+", nullable="3+", default=None)
    reason: str | None = field(STRING, "5+", nullable="5+", default=None, ignorable=True)


class LeaveGroupRequest(Message, api_key=13, valid="0-5", flexible="4+"):
    group_id: str = field(STRING, "0+")
    #: v0-2: the one leaving member (v3+ batch `members`).
    member_id: str = field(STRING, "0-2", default="")
    members: list[MemberIdentity] = field(Array(MemberIdentity), "3+", default=[])


class LeaveGroupMemberResponse(Struct):
    member_id: str = field(STRING, "3+")
    group_instance_id: str | None = field(STRING, "3+", nullable="3+", default=None)
    error_code: int = field(INT16, "3+", default=0)


class LeaveGroupResponse(Message, api_key=13, valid="0-5", flexible="4+"):
    throttle_time_ms: int = field(INT32, "1+", default=0, ignorable=True)
    error_code: int = field(INT16, "0+", default=0)
    members: list[LeaveGroupMemberResponse] = field(Array(LeaveGroupMemberResponse), "3+", default=[])


class SyncGroupRequestAssignment(Struct):
    member_id: str = field(STRING, "0+")
    assignment: bytes = field(BYTES, "0+")


class SyncGroupRequest(Message, api_key=14, valid="0-5", flexible="4+"):
    group_id: str = field(STRING, "0+")
    generation_id: int = field(INT32, "0+")
    member_id: str = field(STRING, "0+")
    group_instance_id: str | None = field(STRING, "3+", nullable="3+", default=None)
    protocol_type: str | None = field(STRING, "5+", nullable="5+", default=None, ignorable=True)
    protocol_name: str | None = field(STRING, "5+", nullable="5+", default=None, ignorable=True)
    assignments: list[SyncGroupRequestAssignment] = field(Array(SyncGroupRequestAssignment), "0+", default=[])


class SyncGroupResponse(Message, api_key=14, valid="0-5", flexible="4+"):
    throttle_time_ms: int = field(INT32, "1+", default=0, ignorable=True)
    error_code: int = field(INT16, "0+", default=0)
    protocol_type: str | None = field(STRING, "5+", nullable="5+", default=None, ignorable=True)
    protocol_name: str | None = field(STRING, "5+", nullable="5+", default=None, ignorable=True)
    assignment: bytes = field(BYTES, "0+", default=b"")


class DescribeGroupsRequest(Message, api_key=15, valid="0-6", flexible="5+"):
    groups: list[str] = field(Array(STRING), "0+")
    include_authorized_operations: bool = field(BOOL, "3+", default=False)


class DescribedGroupMember(Struct):
    member_id: str = field(STRING, "0+")
    group_instance_id: str | None = field(STRING, "4+", nullable="4+", default=None, ignorable=True)
    client_id: str = field(STRING, "0+", default="")
    client_host: str = field(STRING, "0+", default="")
    member_metadata: bytes = field(BYTES, "0+", default=b"")
    member_assignment: bytes = field(BYTES, "0+", default=b"")


class DescribedGroup(Struct):
    error_code: int = field(INT16, "0+", default=0)
    error_message: str | None = field(STRING, "6+", nullable="6+", default=None, ignorable=True)
    group_id: str = field(STRING, "0+")
    group_state: str = field(STRING, "0+", default="")
    protocol_type: str = field(STRING, "0+", default="")
    protocol_data: str = field(STRING, "0+", default="")
    members: list[DescribedGroupMember] = field(Array(DescribedGroupMember), "0+", default=[])
    authorized_operations: int = field(INT32, "3+", default=-(2**31))


class DescribeGroupsResponse(Message, api_key=15, valid="0-6", flexible="5+"):
    throttle_time_ms: int = field(INT32, "1+", default=0, ignorable=True)
    groups: list[DescribedGroup] = field(Array(DescribedGroup), "0+", default=[])
