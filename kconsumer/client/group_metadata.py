"""The member's identity: its member id, and `consumer_group_metadata()` in the form
confluent-kafka's transactional producer reads.

confluent-kafka hands the group metadata around as librdkafka's serialised bytes
(``rd_kafka_consumer_group_metadata_write``; ``Producer.send_offsets_to_transaction`` reads them
back). Observed from librdkafka 2.16 (and checked in tests against its reader): the ASCII magic
``CGMDv2:``, the generation id (the member epoch under the consumer protocol, -1 outside the
group) as a native-endian int32, the group id and the member id each followed by a NUL byte, then
either ``0x01`` (no group instance id) or ``0x00``, the instance id and a NUL byte.
"""

from __future__ import annotations

import os
import struct

from ..protocol.uuid import Uuid

_MAGIC = b"CGMDv2:"


def new_member_id() -> str:
    """A random Kafka Uuid in its text form, as Kafka's consumer generates (never starting with
    '-', which command-line tools would take for an option)."""
    while True:
        text = str(Uuid(os.urandom(16)))
        if not text.startswith("-"):
            return text


def serialized_group_metadata(
    group_id: str, generation: int, member_id: str, instance_id: str | None
) -> bytes:
    """The bytes confluent-kafka's `Consumer.consumer_group_metadata()` returns for this member."""
    parts = [_MAGIC, struct.pack("=i", generation), _c_string(group_id), _c_string(member_id)]
    parts.append(b"\x01" if instance_id is None else b"\x00" + _c_string(instance_id))
    return b"".join(parts)


def _c_string(text: str) -> bytes:
    encoded = text.encode()
    if b"\x00" in encoded:
        raise ValueError(f"{text!r}: a NUL character cannot be serialised in group metadata")
    return encoded + b"\x00"
