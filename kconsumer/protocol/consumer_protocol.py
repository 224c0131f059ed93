"""Kafka's ConsumerProtocol: the bytes consumers put in classic JoinGroup metadata (a
subscription) and SyncGroup assignments, versions 0-3 (ConsumerProtocolSubscription.json and
ConsumerProtocolAssignment.json). Each starts with its int16 version and is never flexible.

Subscription v1 adds the partitions the member owns (KIP-429), v2 its generation, v3 its rack
(KIP-881). A reader accepts newer versions by reading the fields it knows (Kafka's rule for these
embedded protocols: later versions only append fields).
"""

from __future__ import annotations

from typing import TypeVar

from ..errors import ProtocolError
from .schema import Struct, field
from .types import BYTES, INT16, INT32, STRING, Array, DecodeFailure, Reader

#: The highest version kconsumer writes and fully reads.
CONSUMER_PROTOCOL_VERSION = 3

S = TypeVar("S", bound=Struct)


class ConsumerTopicPartitions(Struct):
    topic: str = field(STRING, "0+")
    partitions: list[int] = field(Array(INT32), "0+")


class ConsumerSubscription(Struct):
    """What a classic consumer member subscribes to (JoinGroup protocol metadata)."""

    topics: list[str] = field(Array(STRING), "0+")
    user_data: bytes | None = field(BYTES, "0+", nullable="0+", default=None)
    owned_partitions: list[ConsumerTopicPartitions] = field(Array(ConsumerTopicPartitions), "1+", default=[])
    generation_id: int = field(INT32, "2+", default=-1)
    rack_id: str | None = field(STRING, "3+", nullable="3+", default=None)


class ConsumerAssignment(Struct):
    """What the leader assigns one member (SyncGroup assignment bytes)."""

    assigned_partitions: list[ConsumerTopicPartitions] = field(Array(ConsumerTopicPartitions), "0+")
    user_data: bytes | None = field(BYTES, "0+", nullable="0+", default=None)


def encode_consumer_protocol(value: Struct, version: int = CONSUMER_PROTOCOL_VERSION) -> bytes:
    """A subscription or an assignment as the bytes of `version` (0-3)."""
    if not 0 <= version <= CONSUMER_PROTOCOL_VERSION:
        raise ValueError(f"ConsumerProtocol version {version} (0-{CONSUMER_PROTOCOL_VERSION})")
    return INT16.encoder(False)(version) + type(value)._encode_at(value, version, False)


def decode_consumer_protocol(kind: type[S], data: bytes) -> tuple[S, int]:
    """(the decoded subscription or assignment, the version it was written at). Raises
    ProtocolError naming the field for bytes that do not decode."""
    reader = Reader(data)
    try:
        version = INT16.decoder(False)(reader)
        if version < 0:
            raise DecodeFailure(f"negative version {version}", ["Version"])
        return kind._decode_at(reader, min(version, CONSUMER_PROTOCOL_VERSION), False), version
    except DecodeFailure as exc:
        raise ProtocolError(kind.__name__, None, ".".join(exc.path) or None, exc.reason) from None
