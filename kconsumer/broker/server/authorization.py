"""Authorization of each request with the listener's ACLs (`security.Authorizer`), where and how
Kafka's KafkaApis checks them:

=========================  ==================================  ===================================
API                        group                               topics
=========================  ==================================  ===================================
ConsumerGroupHeartbeat     Read, else GROUP_AUTHORIZATION_     Describe on every subscribed name,
                           FAILED                              else TOPIC_AUTHORIZATION_FAILED
OffsetCommit               Read (every partition fails)        Read, per topic (not written)
OffsetFetch                Describe                            Describe, per topic
OffsetDelete               Delete                              -- (Kafka checks Read per topic)
DeleteGroups               Delete (each group)                 --
FindCoordinator (group)    Describe                            --
ConsumerGroupDescribe,     Describe                            --
Prepare/InstallAssignment
Fetch                      --                                  Read, per topic
ListOffsets, Metadata      --                                  Describe, per topic (Metadata for
                                                               all topics leaves them out)
Produce                    --                                  Write, per topic (not written)
=========================  ==================================  ===================================

A group denial answers the whole request (`denial`); per-topic denials are either taken out of a
request that writes before it runs (`split_writes`) or marked in a read's response (`mark_reads`).
The admin APIs (create/delete topics, partitions) are not checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import ErrorCode
from ...protocol.messages.consumer_group import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from ...protocol.messages.extensions import (
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupPrepareAssignmentRequest,
)
from ...protocol.messages.fetch import FetchResponse
from ...protocol.messages.list_groups import DeleteGroupsRequest
from ...protocol.messages.list_offsets import ListOffsetsResponse
from ...protocol.messages.metadata import FindCoordinatorRequest, MetadataRequest, MetadataResponse
from ...protocol.messages.offsets import (
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from ...protocol.messages.produce import ProduceRequest
from ...protocol.schema import Message
from ...protocol.uuid import Uuid
from .error_responses import error_response
from .security import Authorizer

GROUP_DENIED = ErrorCode.GROUP_AUTHORIZATION_FAILED
TOPIC_DENIED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
#: A topic id -> its name (None: unknown id, left to the handler's UNKNOWN_TOPIC_ID).
TopicNames = Callable[[Uuid], str | None]


class RequestAuthorization:
    """One request's checks for one principal."""

    def __init__(self, authorizer: Authorizer, principal: str, topic_names: TopicNames) -> None:
        self.authorizer = authorizer
        self.principal = principal
        self.topic_names = topic_names

    def allowed(self, operation: str, resource_type: str, name: str) -> bool:
        return self.authorizer.allowed(self.principal, operation, resource_type, name)

    def denial(self, request: Message, version: int) -> Message | None:
        """The whole answer when the request's group (or a heartbeat's topic) is denied."""
        group_check = _GROUP_CHECKS.get(type(request))
        if group_check is not None:
            operation, groups = group_check
            for group in groups(request):
                if not self.allowed(operation, "group", group):
                    return error_response(
                        request,
                        version,
                        GROUP_DENIED,
                        f"{self.principal} may not {operation} group {group!r}",
                    )
        if isinstance(request, ConsumerGroupHeartbeatRequest) and request.subscribed_topic_names:
            denied = [t for t in request.subscribed_topic_names if not self.allowed("Describe", "topic", t)]
            if denied:
                return error_response(
                    request, version, TOPIC_DENIED, f"Topic authorization failed for topics {sorted(denied)}"
                )
        return None

    def split_writes(self, request: Message, version: int) -> tuple[Message, Callable[[Message], None]]:
        """(the request without its denied topics, what adds their TOPIC_AUTHORIZATION_FAILED
        answers to its response) for the APIs that write: OffsetCommit (Read), Produce (Write)."""
        if isinstance(request, OffsetCommitRequest):
            field_name, operation, response_field = "topics", "Read", "topics"
        elif isinstance(request, ProduceRequest):
            field_name, operation, response_field = "topic_data", "Write", "responses"
        else:
            return request, _unchanged
        topics = getattr(request, field_name)
        denied = [t for t in topics if not self._topic_allowed(operation, t)]
        if not denied:
            return request, _unchanged
        allowed = [t for t in topics if t not in denied]
        values = dict(request.__dict__)
        refused = type(request)(**{**values, field_name: denied})
        kept = type(request)(**{**values, field_name: allowed})
        answers = list(getattr(error_response(refused, version, TOPIC_DENIED), response_field))

        def add_refusals(response: Message) -> None:
            getattr(response, response_field).extend(answers)

        return kept, add_refusals

    def mark_reads(self, request: Message, response: Message) -> Message:
        """The response with every denied topic's partitions failed (Fetch: Read; ListOffsets,
        OffsetFetch: Describe) or, for Metadata, the topic failed (or left out when all topics
        were asked for)."""
        if isinstance(response, FetchResponse):
            for topic in response.responses:
                if not self._topic_allowed("Read", topic):
                    for partition in topic.partitions:
                        partition.error_code = TOPIC_DENIED
                        partition.records = b""  # Kafka answers MemoryRecords.EMPTY, never null
                        partition.high_watermark = -1
        elif isinstance(response, ListOffsetsResponse):
            self._mark_offsets(response.topics)
        elif isinstance(response, OffsetFetchResponse):
            for group in response.groups:
                self._mark_offsets(group.topics)
            self._mark_offsets(response.topics)
        elif isinstance(response, MetadataResponse) and isinstance(request, MetadataRequest):
            self._mark_metadata(response, listed_all=request.topics is None)
        return response

    def _mark_metadata(self, response: MetadataResponse, listed_all: bool) -> None:
        kept = []
        for described in response.topics:
            if described.name is None or self.allowed("Describe", "topic", described.name):
                kept.append(described)
            elif not listed_all:
                described.error_code = TOPIC_DENIED
                described.partitions = []
                kept.append(described)
        response.topics = kept

    def _mark_offsets(self, topics: list[Any]) -> None:
        for topic in topics:
            if not self._topic_allowed("Describe", topic):
                for partition in topic.partitions:
                    partition.error_code = TOPIC_DENIED

    def _topic_allowed(self, operation: str, topic: Any) -> bool:
        name = getattr(topic, "name", None) or getattr(topic, "topic", None)
        if not name:
            topic_id = getattr(topic, "topic_id", None)
            name = self.topic_names(topic_id) if topic_id else None
        return name is None or self.allowed(operation, "topic", name)


def _unchanged(response: Message) -> None:
    """Nothing was taken out of the request."""


def _offset_fetch_groups(request: Any) -> list[str]:
    return [g.group_id for g in request.groups] if request.groups else [request.group_id]


def _find_coordinator_groups(request: Any) -> list[str]:
    if request.key_type != 0:
        return []
    return list(request.coordinator_keys) if request.coordinator_keys else [request.key]


_GROUP_CHECKS: dict[type[Message], tuple[str, Callable[[Any], list[str]]]] = {
    ConsumerGroupHeartbeatRequest: ("Read", lambda r: [r.group_id]),
    OffsetCommitRequest: ("Read", lambda r: [r.group_id]),
    OffsetFetchRequest: ("Describe", _offset_fetch_groups),
    OffsetDeleteRequest: ("Delete", lambda r: [r.group_id]),
    DeleteGroupsRequest: ("Delete", lambda r: list(r.groups_names)),
    FindCoordinatorRequest: ("Describe", _find_coordinator_groups),
    ConsumerGroupDescribeRequest: ("Describe", lambda r: list(r.group_ids)),
    ConsumerGroupPrepareAssignmentRequest: ("Read", lambda r: [r.group_id]),
    ConsumerGroupInstallAssignmentRequest: ("Read", lambda r: [r.group_id]),
}
