"""The Fetch response written as a gather list: the stored record batches are never copied.

The generic codec (`Message.encode`) returns one ``bytes``; for a Fetch response that means
copying every served batch once per nesting level (records, partition, partitions array, topic,
topics array, message), several megabytes per response, all while holding the GIL. This module
writes the same bytes as a list of buffers instead: small header pieces built with `struct`, and
the stored batch chunks themselves, which the connection hands to the socket as they are.

It covers what the broker sends (every version 4-18; no tagged field set except the defaults).
A response that sets a tagged field (diverging epoch, current leader, snapshot id, node
endpoints) is encoded by the generic codec instead. Tests check that both encodings produce the
same bytes for every version.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from ...protocol.messages.fetch import (
    EpochEndOffset,
    FetchResponse,
    PartitionData,
    SnapshotId,
)
from ...protocol.messages.produce import LeaderIdAndEpoch
from ...protocol.types import write_uvarint

Buffer = bytes | bytearray | memoryview

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_TOP_V7 = struct.Struct(">ihi")  # throttle, error code, session id
_PARTITION_V4 = struct.Struct(">ihqq")  # index, error code, high watermark, last stable offset
_PARTITION_V5 = struct.Struct(">ihqqq")  # ... log start offset
_ABORTED = struct.Struct(">qq")
_NO_TAGS = b"\x00"
_NULL_INT32 = _I32.pack(-1)
_NULL_UVARINT = b"\x00"

_DEFAULT_DIVERGING = EpochEndOffset()
_DEFAULT_LEADER = LeaderIdAndEpoch()
_DEFAULT_SNAPSHOT = SnapshotId()

#: Chunks smaller than this are joined with their neighbours before they reach the socket.
COALESCE_BELOW = 64 * 1024


def has_tagged_fields(response: FetchResponse) -> bool:
    """Whether any tagged field differs from its default (then the generic codec must encode it)."""
    if response.node_endpoints:
        return True
    for topic in response.responses:
        for partition in topic.partitions:
            if (
                partition.diverging_epoch != _DEFAULT_DIVERGING
                or partition.current_leader != _DEFAULT_LEADER
                or partition.snapshot_id != _DEFAULT_SNAPSHOT
            ):
                return True
    return False


def encode_fetch_response(response: FetchResponse, version: int) -> list[Buffer]:
    """The body of `response` at `version` as buffers whose concatenation is ``response.encode(version)``."""
    if not 4 <= version <= 18:
        raise ValueError(f"FetchResponse v{version} is not served")
    if has_tagged_fields(response):
        return [response.encode(version)]
    flexible = version >= 12
    out: list[Buffer] = []
    head = bytearray()
    if version >= 7:
        head += _TOP_V7.pack(response.throttle_time_ms, response.error_code, response.session_id)
    else:
        head += _I32.pack(response.throttle_time_ms)
    head += _count(len(response.responses), flexible)
    for topic in response.responses:
        if version >= 13:
            head += topic.topic_id.bytes
        else:
            head += _string(topic.topic, flexible)
        head += _count(len(topic.partitions), flexible)
        for partition in topic.partitions:
            head += _partition_header(partition, version, flexible)
            records = partition.records
            if records is None:
                head += _NULL_UVARINT if flexible else _NULL_INT32
            else:
                chunks: Sequence[Any] = (
                    (records,) if isinstance(records, (bytes, bytearray, memoryview)) else records
                )
                size = 0
                for chunk in chunks:
                    size += len(chunk)
                head += write_uvarint(size + 1) if flexible else _I32.pack(size)
                for chunk in chunks:
                    if len(chunk) < COALESCE_BELOW:
                        head += chunk
                    else:
                        out.append(head)
                        out.append(chunk)
                        head = bytearray()
            if flexible:
                head += _NO_TAGS
        if flexible:
            head += _NO_TAGS
    if flexible:
        head += _NO_TAGS
    out.append(head)
    return out


def _partition_header(partition: PartitionData, version: int, flexible: bool) -> bytes:
    if version >= 5:
        fixed = _PARTITION_V5.pack(
            partition.partition_index,
            partition.error_code,
            partition.high_watermark,
            partition.last_stable_offset,
            partition.log_start_offset,
        )
    else:
        fixed = _PARTITION_V4.pack(
            partition.partition_index,
            partition.error_code,
            partition.high_watermark,
            partition.last_stable_offset,
        )
    aborted = partition.aborted_transactions
    if aborted is None:
        tail = _NULL_UVARINT if flexible else _NULL_INT32
    else:
        parts = [_count(len(aborted), flexible)]
        for transaction in aborted:
            parts.append(_ABORTED.pack(transaction.producer_id, transaction.first_offset))
            if flexible:
                parts.append(_NO_TAGS)
        tail = b"".join(parts)
    if version >= 11:
        tail += _I32.pack(partition.preferred_read_replica)
    return fixed + tail


def _count(count: int, flexible: bool) -> bytes:
    return write_uvarint(count + 1) if flexible else _I32.pack(count)


def _string(value: str, flexible: bool) -> bytes:
    raw = value.encode("utf-8")
    return (write_uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw
