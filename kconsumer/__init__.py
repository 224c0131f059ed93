"""kconsumer: a Kafka consumer for the KIP-848 consumer group protocol (``group.protocol=consumer``).

::

    from kconsumer import Consumer

    consumer = Consumer({"bootstrap.servers": "localhost:9092", "group.id": "orders"})
    consumer.subscribe(["orders"])
    while True:
        message = consumer.poll(1.0)
        ...

It has confluent-kafka's API: `TopicPartition`, `Message`, `KafkaException` and `KafkaError` are
confluent-kafka's own types.
"""

from __future__ import annotations

import logging

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from .assignment.assignor import (
    AssignmentMemberSpec,
    AssignmentSpec,
    AssignmentTopicMetadata,
    AssignorError,
    AssignorFailedError,
    AssignorMetadata,
    GroupAssignment,
    GroupMetadata,
    MemberAssignment,
    MemberMetadata,
    PartitionAssignor,
)
from .assignment.builtin import RangeAssignor, UniformAssignor
from .client.consumer import Consumer
from .client.listener import ConsumerRebalanceListener
from .client.subscription import SubscriptionPattern
from .errors import ConfigError, KConsumerError, ProtocolError
from .patterns import InvalidPatternError

__version__ = "0.1.0"

# A library stays quiet unless the application configures logging (no "last resort" output).
logging.getLogger("kconsumer").addHandler(logging.NullHandler())

__all__ = [
    "AssignmentMemberSpec",
    "AssignmentSpec",
    "AssignmentTopicMetadata",
    "AssignorError",
    "AssignorFailedError",
    "AssignorMetadata",
    "ConfigError",
    "Consumer",
    "ConsumerRebalanceListener",
    "GroupAssignment",
    "GroupMetadata",
    "InvalidPatternError",
    "KConsumerError",
    "KafkaError",
    "KafkaException",
    "MemberAssignment",
    "MemberMetadata",
    "Message",
    "PartitionAssignor",
    "ProtocolError",
    "RangeAssignor",
    "SubscriptionPattern",
    "TopicPartition",
    "UniformAssignor",
    "__version__",
]
