"""Record batches (magic v2): header scanning, in-place rebasing, building and decoding.

The reference broker stores and serves the record bytes producers send, untouched except for the
base offset (and, optionally, the partition leader epoch) of each batch. Neither field is covered
by the batch CRC, which starts at the attributes, so rewriting them keeps the batch valid. The
append and serve paths therefore only read the 61-byte header of each batch at fixed offsets
(`struct.unpack_from` on the caller's buffer, no copy) and never look at individual records.

Batch header layout (all big-endian)::

    offset  size  field
         0     8  BaseOffset
         8     4  BatchLength            (bytes after this field)
        12     4  PartitionLeaderEpoch
        16     1  Magic                  (2; v0/v1 message sets have their magic here too)
        17     4  CRC                    (CRC-32C of everything from Attributes to the end)
        21     2  Attributes             (bits 0-2 compression, 3 timestamp type,
                                          4 transactional, 5 control)
        23     4  LastOffsetDelta
        27     8  BaseTimestamp
        35     8  MaxTimestamp
        43     8  ProducerId
        51     2  ProducerEpoch
        53     4  BaseSequence
        57     4  RecordCount
        61        Records (compressed as a whole when the compression bits are set)

Building and decoding records go through aiokafka's ``DefaultRecordBatchBuilder`` and
``DefaultRecordBatch`` (see `_aiokafka`); they are meant for tests, tools and the simulation, not
for the broker's hot path. Malformed input raises `ProtocolError("RecordBatch", None, field,
reason)` and nothing else.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from ..errors import ProtocolError
from . import _aiokafka as ak

#: Bytes before the BatchLength count starts (BaseOffset + BatchLength).
LOG_OVERHEAD = 12
#: Size of the v2 batch header, up to and including RecordCount.
BATCH_HEADER_SIZE = 61
#: The smallest legal BatchLength (a header with no records).
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD
#: The only record format kconsumer speaks (Kafka 4.x writes nothing else).
MAGIC_V2 = 2

#: Attribute bits.
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20

#: Compression codecs (Attributes bits 0-2).
COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4

#: Timestamp types (Attributes bit 3).
CREATE_TIME = 0
LOG_APPEND_TIME = 1

#: ProducerId/ProducerEpoch/BaseSequence of a batch written without idempotence.
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
#: PartitionLeaderEpoch of a batch a producer wrote (the broker fills it in).
NO_PARTITION_LEADER_EPOCH = -1

#: An uncompressed record takes at least 7 bytes (length, attributes, timestamp delta, offset
#: delta, key length, value length and header count, one byte each).
_MIN_RECORD_SIZE = 7

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_MAGIC_OFFSET = 16
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21

Buffer = bytes | bytearray | memoryview


class BatchHeader(NamedTuple):
    """The header of one record batch, and where the batch sits in the scanned buffer."""

    #: Byte position of the batch (its BaseOffset field) in the buffer that was scanned.
    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch takes, header included."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def end(self) -> int:
        """Byte position just past the batch."""
        return self.position + LOG_OVERHEAD + self.batch_length

    @property
    def compression(self) -> int:
        """The codec, one of the ``COMPRESSION_*`` constants."""
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """`CREATE_TIME` or `LOG_APPEND_TIME`."""
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        """Whether the batch belongs to a transaction."""
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        """Whether the batch holds control records (transaction markers)."""
        return bool(self.attributes & CONTROL_MASK)

    @property
    def last_offset(self) -> int:
        """Offset of the batch's last record."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset that follows the batch."""
        return self.base_offset + self.last_offset_delta + 1


_new_header = tuple.__new__


def _fail(field: str, reason: str) -> ProtocolError:
    return ProtocolError("RecordBatch", None, field, reason)


def _read_header(view: memoryview, position: int) -> BatchHeader:
    """The header of the batch at `position`, bounds-checked against `view` (its length is the limit)."""
    available = len(view) - position
    if available < LOG_OVERHEAD:
        raise _fail("BatchLength", f"batch at byte {position}: {available} bytes, a header needs 12")
    (batch_length,) = _INT32.unpack_from(view, position + 8)
    if batch_length < MIN_BATCH_LENGTH:
        # Say "magic" rather than "length" for an old-format message set, whose messages can be short.
        if available > _MAGIC_OFFSET and view[position + _MAGIC_OFFSET] in (0, 1):
            raise _fail("Magic", _legacy_magic_reason(view[position + _MAGIC_OFFSET], position))
        raise _fail(
            "BatchLength",
            f"batch at byte {position}: length {batch_length} is below the {MIN_BATCH_LENGTH}-byte minimum",
        )
    if available < LOG_OVERHEAD + batch_length:
        raise _fail(
            "BatchLength",
            f"batch at byte {position}: length {batch_length} exceeds the "
            f"{available - LOG_OVERHEAD} bytes left",
        )
    fields = _HEADER.unpack_from(view, position)
    magic, attributes, last_offset_delta, count = fields[3], fields[5], fields[6], fields[12]
    if magic != MAGIC_V2:
        raise _fail("Magic", _legacy_magic_reason(magic, position))
    compression = attributes & COMPRESSION_MASK
    if compression > COMPRESSION_ZSTD:
        raise _fail("Attributes", f"batch at byte {position}: unknown compression codec {compression}")
    if last_offset_delta < 0:
        raise _fail("LastOffsetDelta", f"batch at byte {position}: negative ({last_offset_delta})")
    if count < 0:
        raise _fail("RecordCount", f"batch at byte {position}: negative ({count})")
    if compression == COMPRESSION_NONE and count * _MIN_RECORD_SIZE > batch_length - MIN_BATCH_LENGTH:
        raise _fail(
            "RecordCount",
            f"batch at byte {position}: {count} records cannot fit in "
            f"{batch_length - MIN_BATCH_LENGTH} bytes",
        )
    return _new_header(BatchHeader, (position, *fields))


def _legacy_magic_reason(magic: int, position: int) -> str:
    if magic in (0, 1):
        return (
            f"batch at byte {position}: magic {magic} (a pre-0.11 message set) is not supported; "
            "only v2 record batches are"
        )
    return f"batch at byte {position}: magic {magic} is not a record format (only v2 is supported)"


def iter_batches(data: Buffer | None, *, allow_partial_tail: bool = False) -> Iterator[BatchHeader]:
    """The headers of the batches in a records blob, in order.

    `data` is a records field as it arrives (None means no records). Every batch must lie
    completely inside `data`, except that with `allow_partial_tail` a truncated last batch ends the
    iteration silently: brokers may cut a Fetch response in the middle of a batch, and clients
    ignore that tail. Anything else malformed raises `ProtocolError`.
    """
    if data is None:
        return
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    position = 0
    end = len(view)
    while position < end:
        if allow_partial_tail:
            left = end - position
            if left < LOG_OVERHEAD:
                return
            (batch_length,) = _INT32.unpack_from(view, position + 8)
            if batch_length >= MIN_BATCH_LENGTH and left < LOG_OVERHEAD + batch_length:
                return
        header = _read_header(view, position)
        yield header
        position = header.end


def read_batches(data: Buffer | None, *, allow_partial_tail: bool = False) -> list[BatchHeader]:
    """`iter_batches` as a list."""
    return list(iter_batches(data, allow_partial_tail=allow_partial_tail))


def set_base_offset(buffer: bytearray | memoryview, position: int, base_offset: int) -> None:
    """Rewrite the BaseOffset of the batch at `position` in place (the CRC stays valid)."""
    _INT64.pack_into(buffer, position, base_offset)


def set_partition_leader_epoch(buffer: bytearray | memoryview, position: int, epoch: int) -> None:
    """Rewrite the PartitionLeaderEpoch of the batch at `position` in place (not covered by the CRC)."""
    _INT32.pack_into(buffer, position + 12, epoch)


def assign_offsets(
    buffer: bytearray | memoryview, first_offset: int, *, partition_leader_epoch: int | None = None
) -> tuple[int, list[BatchHeader]]:
    """Give the batches in `buffer` consecutive offsets from `first_offset`, in place.

    This is the broker's append step: each batch's BaseOffset becomes the next free offset (and
    its PartitionLeaderEpoch `partition_leader_epoch`, if given). Returns the next free offset
    after the last batch and the headers as they were *before* the rewrite (so ``position``,
    ``record_count``, ``max_timestamp`` etc. are at hand for the log index). The buffer is
    validated first, so a malformed one raises `ProtocolError` and is left unchanged.
    """
    headers = read_batches(buffer)
    next_offset = first_offset
    for header in headers:
        _INT64.pack_into(buffer, header.position, next_offset)
        if partition_leader_epoch is not None:
            _INT32.pack_into(buffer, header.position + 12, partition_leader_epoch)
        next_offset += header.last_offset_delta + 1
    return next_offset, headers


def crc_is_valid(data: Buffer, header: BatchHeader) -> bool:
    """Whether the CRC-32C stored in the batch matches its bytes (Attributes to the end)."""
    view = memoryview(data)
    body = bytes(view[header.position + _ATTRIBUTES_OFFSET : header.end])
    crc: int = ak.calc_crc32c(body)
    return crc == header.crc


# -- building and decoding (tests, tools, simulation) -------------------------------------------

#: The ``(key, value, headers, timestamp_ms)`` of one record to build.
RecordTuple = tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]], int]


class Record(NamedTuple):
    """One decoded record."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


def build_batch(
    records: Iterable[RecordTuple],
    *,
    base_offset: int = 0,
    compression: int = COMPRESSION_NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    transactional: bool = False,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """One v2 batch holding `records` (offset deltas 0, 1, ...), built by aiokafka's builder.

    Timestamps are explicit (this module has no clock). `compression` needs the codec's library
    for anything but `COMPRESSION_NONE`. An empty `records` is a `ValueError`: Kafka has no
    empty producer batch.
    """
    builder = ak.DefaultRecordBatchBuilder(
        MAGIC_V2,
        compression,
        int(transactional),
        producer_id,
        producer_epoch,
        base_sequence,
        2**31 - 1,
    )
    count = 0
    for key, value, headers, timestamp in records:
        builder.append(count, timestamp, key, value, list(headers))
        count += 1
    if count == 0:
        raise ValueError("a record batch needs at least one record")
    batch = builder.build()
    _INT64.pack_into(batch, 0, base_offset)
    if partition_leader_epoch != NO_PARTITION_LEADER_EPOCH:
        _INT32.pack_into(batch, 12, partition_leader_epoch)
    return bytes(batch)


#: Control record types (the key of a transaction marker).
CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")  # version 0, type
_CONTROL_VALUE = struct.Struct(">hi")  # version 0, coordinator epoch
_UINT32 = struct.Struct(">I")
_ATTRIBUTES = struct.Struct(">h")


def build_control_batch(
    producer_id: int,
    producer_epoch: int,
    committed: bool,
    *,
    coordinator_epoch: int = 0,
    timestamp_ms: int = 0,
    base_offset: int = 0,
) -> bytes:
    """A transaction marker: a transactional control batch holding one control record whose key
    says COMMIT or ABORT and whose value carries the transaction coordinator's epoch."""
    kind = CONTROL_COMMIT if committed else CONTROL_ABORT
    key = _CONTROL_KEY.pack(0, kind)
    value = _CONTROL_VALUE.pack(0, coordinator_epoch)
    batch = bytearray(
        build_batch(
            [(key, value, (), timestamp_ms)],
            base_offset=base_offset,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            transactional=True,
        )
    )
    (attributes,) = _ATTRIBUTES.unpack_from(batch, _ATTRIBUTES_OFFSET)
    _ATTRIBUTES.pack_into(batch, _ATTRIBUTES_OFFSET, attributes | CONTROL_MASK)
    _UINT32.pack_into(batch, _CRC_OFFSET, ak.calc_crc32c(bytes(batch[_ATTRIBUTES_OFFSET:])))
    return bytes(batch)


def control_type(data: Buffer, header: BatchHeader) -> int:
    """`CONTROL_COMMIT` or `CONTROL_ABORT` of the control batch at `header` (its first record's key)."""
    records = decode_records(memoryview(data)[header.position : header.end], include_control=True)
    if not records or records[0].key is None or len(records[0].key) < _CONTROL_KEY.size:
        raise _fail("Records", f"control batch at byte {header.position} has no control record key")
    return int(_CONTROL_KEY.unpack_from(records[0].key)[1])


def decode_records(data: Buffer | None, *, include_control: bool = False) -> list[Record]:
    """Every record in a records blob, decoded by aiokafka's ``DefaultRecordBatch``.

    Control batches (transaction markers) are skipped unless `include_control`. A truncated last
    batch is ignored, as a consumer would. Malformed batches raise `ProtocolError`.
    """
    out: list[Record] = []
    if data is None:
        return out
    view = memoryview(data)
    for header in iter_batches(view, allow_partial_tail=True):
        if header.is_control and not include_control:
            continue
        batch = ak.DefaultRecordBatch(bytes(view[header.position : header.end]))
        try:
            for record in batch:
                out.append(Record(record.offset, record.timestamp, record.key, record.value, record.headers))
        except Exception as exc:  # aiokafka raises CorruptRecordException, codec and value errors
            raise _fail("Records", f"batch at byte {header.position}: {type(exc).__name__}: {exc}") from None
    return out
