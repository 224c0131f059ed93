"""CreateTopics (19), DeleteTopics (20) and CreatePartitions (37).

Kafka 4.x implements CreateTopics v2-7 (flexible 5+; v7 returns the new topic's id), DeleteTopics
v1-6 (flexible 4+; v6 deletes by name or id) and CreatePartitions v0-3 (flexible 2+).
"""

from __future__ import annotations

from ..schema import Message, Struct, field
from ..types import BOOL, INT8, INT16, INT32, STRING, UUID, Array
from ..uuid import Uuid

# -- CreateTopics ------------------------------------------------------------------------------


class CreatableReplicaAssignment(Struct):
    """A manual placement of one partition."""

    partition_index: int = field(INT32, "0+")
    broker_ids: list[int] = field(Array(INT32), "0+")


class CreatableTopicConfig(Struct):
    """A topic configuration override."""

    name: str = field(STRING, "0+")
    value: str | None = field(STRING, "0+", nullable="0+")


class CreatableTopic(Struct):
    """A topic to create; -1 partitions/replication factor take the broker defaults."""

    name: str = field(STRING, "0+")
    num_partitions: int = field(INT32, "0+")
    replication_factor: int = field(INT16, "0+")
    assignments: list[CreatableReplicaAssignment] = field(Array(CreatableReplicaAssignment), "0+")
    configs: list[CreatableTopicConfig] = field(Array(CreatableTopicConfig), "0+")


class CreateTopicsRequest(Message, api_key=19, valid="2-7", flexible="5+"):
    """Creates topics (or, with `validate_only`, only checks that they could be created)."""

    topics: list[CreatableTopic] = field(Array(CreatableTopic), "0+")
    timeout_ms: int = field(INT32, "0+", default=60000, name="timeoutMs")
    validate_only: bool = field(BOOL, "1+", default=False, name="validateOnly")


class CreatableTopicConfigs(Struct):
    """v5+: one configuration entry of a created topic."""

    name: str = field(STRING, "5+")
    value: str | None = field(STRING, "5+", nullable="5+")
    read_only: bool = field(BOOL, "5+")
    config_source: int = field(INT8, "5+", default=-1, ignorable=True)
    is_sensitive: bool = field(BOOL, "5+")


class CreatableTopicResult(Struct):
    """The outcome for one topic; v5+ also describe it, v7+ give its id."""

    name: str = field(STRING, "0+")
    topic_id: Uuid = field(UUID, "7+", ignorable=True)
    error_code: int = field(INT16, "0+")
    error_message: str | None = field(STRING, "1+", nullable="0+", ignorable=True)
    topic_config_error_code: int = field(INT16, "5+", tag=0, ignorable=True)
    num_partitions: int = field(INT32, "5+", default=-1, ignorable=True)
    replication_factor: int = field(INT16, "5+", default=-1, ignorable=True)
    configs: list[CreatableTopicConfigs] | None = field(
        Array(CreatableTopicConfigs), "5+", nullable="5+", ignorable=True
    )


class CreateTopicsResponse(Message, api_key=19, valid="2-7", flexible="5+"):
    """Per-topic outcomes of a CreateTopics request."""

    throttle_time_ms: int = field(INT32, "2+", ignorable=True)
    topics: list[CreatableTopicResult] = field(Array(CreatableTopicResult), "0+")


# -- DeleteTopics ------------------------------------------------------------------------------


class DeleteTopicState(Struct):
    """v6+: a topic to delete, by name or by id."""

    name: str | None = field(STRING, "6+", nullable="6+", default=None)
    topic_id: Uuid = field(UUID, "6+")


class DeleteTopicsRequest(Message, api_key=20, valid="1-6", flexible="4+"):
    """Deletes topics: by name in v1-5 (`topic_names`), by name or id in v6+ (`topics`)."""

    topics: list[DeleteTopicState] = field(Array(DeleteTopicState), "6+")
    topic_names: list[str] = field(Array(STRING), "0-5", ignorable=True)
    timeout_ms: int = field(INT32, "0+")


class DeletableTopicResult(Struct):
    """The outcome for one topic."""

    name: str | None = field(STRING, "0+", nullable="6+")
    topic_id: Uuid = field(UUID, "6+", ignorable=True)
    error_code: int = field(INT16, "0+")
    error_message: str | None = field(STRING, "5+", nullable="5+", default=None, ignorable=True)


class DeleteTopicsResponse(Message, api_key=20, valid="1-6", flexible="4+"):
    """Per-topic outcomes of a DeleteTopics request."""

    throttle_time_ms: int = field(INT32, "1+", ignorable=True)
    responses: list[DeletableTopicResult] = field(Array(DeletableTopicResult), "0+")


# -- CreatePartitions --------------------------------------------------------------------------


class CreatePartitionsAssignment(Struct):
    """The replicas of one new partition."""

    broker_ids: list[int] = field(Array(INT32), "0+")


class CreatePartitionsTopic(Struct):
    """A topic to grow to `count` partitions (null `assignments`: the broker places them)."""

    name: str = field(STRING, "0+")
    count: int = field(INT32, "0+")
    assignments: list[CreatePartitionsAssignment] | None = field(
        Array(CreatePartitionsAssignment), "0+", nullable="0+"
    )


class CreatePartitionsRequest(Message, api_key=37, valid="0-3", flexible="2+"):
    """Adds partitions to existing topics."""

    topics: list[CreatePartitionsTopic] = field(Array(CreatePartitionsTopic), "0+")
    timeout_ms: int = field(INT32, "0+")
    validate_only: bool = field(BOOL, "0+")


class CreatePartitionsTopicResult(Struct):
    """The outcome for one topic."""

    name: str = field(STRING, "0+")
    error_code: int = field(INT16, "0+")
    error_message: str | None = field(STRING, "0+", nullable="0+", default=None)


class CreatePartitionsResponse(Message, api_key=37, valid="0-3", flexible="2+"):
    """Per-topic outcomes of a CreatePartitions request."""

    throttle_time_ms: int = field(INT32, "0+")
    results: list[CreatePartitionsTopicResult] = field(Array(CreatePartitionsTopicResult), "0+")
