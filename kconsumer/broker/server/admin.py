"""CreateTopics (19), DeleteTopics (20) and CreatePartitions (37), validated as Kafka validates them.

With a single broker, the only replication factor is 1 (-1 takes it by default) and a manual
replica assignment may only name broker 1. Every change publishes a new metadata image to the
group coordinator (through `Topics`).
"""

from __future__ import annotations

from collections import Counter

from ...errors import ErrorCode
from ...protocol.messages.admin import (
    CreatableTopic,
    CreatableTopicResult,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from ...protocol.uuid import ZERO_UUID
from .config import NODE_ID
from .log import Topics, topic_name_error

#: Kafka's limit on the partitions of one topic is far higher; this keeps a typo from eating memory.
MAX_PARTITIONS = 100_000


class _Invalid(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def handle_create_topics(
    topics: Topics, request: CreateTopicsRequest, version: int, *, default_partitions: int
) -> CreateTopicsResponse:
    counts = Counter(topic.name for topic in request.topics)
    results = []
    for wanted in request.topics:
        result = CreatableTopicResult(name=wanted.name, error_code=0, error_message=None)
        if counts[wanted.name] > 1:
            result.error_code = ErrorCode.INVALID_REQUEST
            result.error_message = (
                f"Create topics request from client contains a duplicate topic {wanted.name}"
            )
            results.append(result)
            continue
        try:
            partitions = _validate_new_topic(topics, wanted, default_partitions)
        except _Invalid as exc:
            result.error_code = exc.code
            result.error_message = exc.message
            results.append(result)
            continue
        result.num_partitions = partitions
        result.replication_factor = 1
        result.configs = []
        if not request.validate_only:
            result.topic_id = topics.create(wanted.name, partitions).topic_id
        results.append(result)
    return CreateTopicsResponse(topics=results)


def _validate_new_topic(topics: Topics, wanted: CreatableTopic, default_partitions: int) -> int:
    """The partition count of a valid new topic, or `_Invalid`."""
    problem = topic_name_error(wanted.name)
    if problem is not None:
        raise _Invalid(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
    if topics.get(wanted.name) is not None:
        raise _Invalid(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{wanted.name}' already exists.")
    if wanted.assignments:
        if wanted.num_partitions != -1 or wanted.replication_factor != -1:
            raise _Invalid(
                ErrorCode.INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.",
            )
        indexes = sorted(a.partition_index for a in wanted.assignments)
        if indexes != list(range(len(indexes))):
            raise _Invalid(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Partitions should be a consecutive 0-based integer sequence, but got {indexes}",
            )
        for assignment in wanted.assignments:
            if assignment.broker_ids != [NODE_ID]:
                raise _Invalid(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"partition {assignment.partition_index}: the only broker is {NODE_ID}, "
                    f"got replicas {assignment.broker_ids}",
                )
        partitions = len(indexes)
    else:
        partitions = default_partitions if wanted.num_partitions == -1 else wanted.num_partitions
        if partitions <= 0:
            raise _Invalid(
                ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
            )
        factor = wanted.replication_factor
        if factor == 0 or factor < -1:
            raise _Invalid(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                "Replication factor must be larger than 0, or -1 to use the default value.",
            )
        if factor > 1:
            raise _Invalid(
                ErrorCode.INVALID_REPLICATION_FACTOR,
                f"Unable to replicate the partition {factor} time(s): The target replication factor of "
                f"{factor} cannot be reached because only 1 broker(s) are registered.",
            )
    if partitions > MAX_PARTITIONS:
        raise _Invalid(ErrorCode.INVALID_PARTITIONS, f"at most {MAX_PARTITIONS} partitions per topic here")
    for config in wanted.configs:
        if config.value is None:
            raise _Invalid(
                ErrorCode.INVALID_CONFIG, f"Null value not supported for topic config {config.name}"
            )
    return partitions


def handle_delete_topics(topics: Topics, request: DeleteTopicsRequest, version: int) -> DeleteTopicsResponse:
    results = []
    if version >= 6:
        for wanted in request.topics:
            if wanted.name is not None and wanted.topic_id:
                results.append(
                    DeletableTopicResult(
                        name=wanted.name,
                        topic_id=wanted.topic_id,
                        error_code=ErrorCode.INVALID_REQUEST,
                        error_message="Topic name and topic id can't both be set",
                    )
                )
                continue
            if wanted.name is None:
                topic = topics.get_by_id(wanted.topic_id)
                if topic is None:
                    results.append(
                        DeletableTopicResult(
                            name=None, topic_id=wanted.topic_id, error_code=ErrorCode.UNKNOWN_TOPIC_ID
                        )
                    )
                    continue
            else:
                topic = topics.get(wanted.name)
                if topic is None:
                    results.append(
                        DeletableTopicResult(
                            name=wanted.name,
                            topic_id=ZERO_UUID,
                            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        )
                    )
                    continue
            topics.delete(topic)
            results.append(DeletableTopicResult(name=topic.name, topic_id=topic.topic_id, error_code=0))
        return DeleteTopicsResponse(responses=results)
    for name in request.topic_names:
        topic = topics.get(name)
        if topic is None:
            results.append(DeletableTopicResult(name=name, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        topics.delete(topic)
        results.append(DeletableTopicResult(name=name, error_code=0))
    return DeleteTopicsResponse(responses=results)


def handle_create_partitions(
    topics: Topics, request: CreatePartitionsRequest, version: int
) -> CreatePartitionsResponse:
    counts = Counter(topic.name for topic in request.topics)
    results = []
    for wanted in request.topics:
        code: int
        message: str | None
        if counts[wanted.name] > 1:
            code, message = ErrorCode.INVALID_REQUEST, "Duplicate topic in request."
        else:
            code, message = _grow(topics, wanted, request.validate_only)
        results.append(
            CreatePartitionsTopicResult(name=wanted.name, error_code=int(code), error_message=message)
        )
    return CreatePartitionsResponse(results=results)


def _grow(topics: Topics, wanted: CreatePartitionsTopic, validate_only: bool) -> tuple[int, str | None]:
    topic = topics.get(wanted.name)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{wanted.name}' does not exist."
    current = len(topic.partitions)
    if wanted.count == current:
        return ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions."
    if wanted.count < current:
        return (
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {wanted.name} currently has {current} partition(s); "
            f"{wanted.count} would not be an increase.",
        )
    if wanted.count > MAX_PARTITIONS:
        return ErrorCode.INVALID_PARTITIONS, f"at most {MAX_PARTITIONS} partitions per topic here"
    if wanted.assignments is not None:
        if len(wanted.assignments) != wanted.count - current:
            return (
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {wanted.count - current} additional partition(s), but only "
                f"{len(wanted.assignments)} assignment(s) were specified.",
            )
        if any(a.broker_ids != [NODE_ID] for a in wanted.assignments):
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"the only broker is {NODE_ID}"
    if not validate_only:
        topics.grow(topic, wanted.count)
    return ErrorCode.NONE, None
