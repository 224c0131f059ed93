"""Record batches: header scanning, in-place rebasing (CRC stays valid), building and decoding."""

from __future__ import annotations

import contextlib
import struct
import sys
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kconsumer.errors import ProtocolError
from kconsumer.protocol import _aiokafka as ak
from kconsumer.protocol import records as rb

T0 = 1_700_000_000_000


def _batch(n: int = 3, **kwargs: object) -> bytes:
    rows = [(f"k{i}".encode(), f"value-{i}".encode(), [("h", b"x")], T0 + i) for i in range(n)]
    return rb.build_batch(rows, **kwargs)  # type: ignore[arg-type]


def _aiokafka_view(data: bytes, header: rb.BatchHeader) -> object:
    return ak.DefaultRecordBatch(bytes(data[header.position : header.end]))


# -- headers -----------------------------------------------------------------------------------


def test_header_fields_of_a_built_batch() -> None:
    data = rb.build_batch(
        [(b"a", b"1", [], T0 + 5), (None, b"2", [("k", None)], T0 + 9), (b"c", None, [], T0 + 1)],
        base_offset=42,
        producer_id=7,
        producer_epoch=3,
        base_sequence=11,
        partition_leader_epoch=4,
    )
    (header,) = rb.read_batches(data)
    assert header.position == 0
    assert header.size == len(data) == header.end
    assert header.base_offset == 42
    assert header.batch_length == len(data) - rb.LOG_OVERHEAD
    assert header.partition_leader_epoch == 4
    assert header.magic == 2
    assert header.compression == rb.COMPRESSION_NONE
    assert header.timestamp_type == rb.CREATE_TIME
    assert not header.is_transactional and not header.is_control
    assert header.last_offset_delta == 2
    assert (header.last_offset, header.next_offset) == (44, 45)
    assert header.base_timestamp == T0 + 5
    assert header.max_timestamp == T0 + 9
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 3, 11)
    assert header.record_count == 3
    # The same values aiokafka's own reader sees.
    batch = ak.DefaultRecordBatch(data)
    assert (batch.base_offset, batch.crc, batch.max_timestamp) == (42, header.crc, header.max_timestamp)
    assert batch.validate_crc()
    assert rb.crc_is_valid(data, header)


def test_attribute_bits() -> None:
    data = bytearray(_batch(transactional=True))
    (header,) = rb.read_batches(data)
    assert header.is_transactional and not header.is_control
    attributes = header.attributes | rb.CONTROL_MASK | rb.TIMESTAMP_TYPE_MASK
    struct.pack_into(">h", data, 21, attributes)
    (header,) = rb.read_batches(data)
    assert header.is_control and header.timestamp_type == rb.LOG_APPEND_TIME


def test_several_batches_are_scanned_in_order() -> None:
    blob = _batch(2, base_offset=0) + _batch(5, base_offset=2) + _batch(1, base_offset=7)
    headers = rb.read_batches(blob)
    assert [h.record_count for h in headers] == [2, 5, 1]
    assert [h.base_offset for h in headers] == [0, 2, 7]
    assert headers[1].position == headers[0].end and headers[2].end == len(blob)


def test_empty_and_null_records() -> None:
    assert rb.read_batches(b"") == []
    assert rb.read_batches(None) == []
    assert rb.decode_records(None) == []


# -- rebasing ----------------------------------------------------------------------------------


def test_assign_offsets_rebases_in_place_and_keeps_crcs_valid() -> None:
    blob = bytearray(_batch(2) + _batch(5) + _batch(1))
    next_offset, before = rb.assign_offsets(blob, 1000, partition_leader_epoch=9)
    assert next_offset == 1008
    assert [h.base_offset for h in before] == [0, 0, 0]  # headers as they were
    after = rb.read_batches(blob)
    assert [h.base_offset for h in after] == [1000, 1002, 1007]
    assert [h.partition_leader_epoch for h in after] == [9, 9, 9]
    for header in after:
        assert header.crc == before[after.index(header)].crc
        assert _aiokafka_view(bytes(blob), header).validate_crc()  # type: ignore[attr-defined]
        assert rb.crc_is_valid(blob, header)
    assert [r.offset for r in rb.decode_records(blob)] == list(range(1000, 1008))


def test_set_base_offset_on_a_memoryview_slice() -> None:
    blob = bytearray(_batch(1) + _batch(3))
    second = rb.read_batches(blob)[1]
    rb.set_base_offset(memoryview(blob), second.position, 2**40)
    rb.set_partition_leader_epoch(blob, second.position, 5)
    header = rb.read_batches(blob)[1]
    assert (header.base_offset, header.partition_leader_epoch) == (2**40, 5)
    assert ak.DefaultRecordBatch(bytes(blob[header.position : header.end])).validate_crc()


def test_assign_offsets_leaves_a_malformed_buffer_unchanged() -> None:
    blob = bytearray(_batch(2) + _batch(2)[:-1])
    original = bytes(blob)
    with pytest.raises(ProtocolError):
        rb.assign_offsets(blob, 100)
    assert bytes(blob) == original


def test_a_corrupted_body_is_caught_by_the_crc_check() -> None:
    data = bytearray(_batch(3))
    data[-1] ^= 0xFF
    (header,) = rb.read_batches(data)
    assert not rb.crc_is_valid(data, header)
    assert not ak.DefaultRecordBatch(bytes(data)).validate_crc()


# -- building and decoding ---------------------------------------------------------------------


def test_build_and_decode_round_trip() -> None:
    rows = [
        (b"key", b"value", [("a", b"1"), ("b", None)], T0),
        (None, None, [], T0 + 1000),
        (b"", b"\x00" * 1000, [], T0 - 5),
    ]
    decoded = rb.decode_records(rb.build_batch(rows, base_offset=10))
    assert decoded == [
        rb.Record(10, T0, b"key", b"value", [("a", b"1"), ("b", None)]),
        rb.Record(11, T0 + 1000, None, None, []),
        rb.Record(12, T0 - 5, b"", b"\x00" * 1000, []),
    ]


def test_gzip_batches_decode() -> None:
    rows = [(None, b"x" * 200, [], T0 + i) for i in range(20)]
    data = rb.build_batch(rows, compression=rb.COMPRESSION_GZIP)
    (header,) = rb.read_batches(data)
    assert header.compression == rb.COMPRESSION_GZIP
    assert header.record_count == 20 and len(data) < 20 * 200
    assert [r.value for r in rb.decode_records(data)] == [b"x" * 200] * 20


def test_control_batches_are_skipped_unless_asked_for() -> None:
    data = bytearray(_batch(1, base_offset=3))
    (header,) = rb.read_batches(data)
    struct.pack_into(">h", data, 21, header.attributes | rb.CONTROL_MASK)
    assert rb.decode_records(data) == []
    assert [r.offset for r in rb.decode_records(data, include_control=True)] == [3]


def test_building_an_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        rb.build_batch([])


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.none() | st.binary(max_size=20),
            st.none() | st.binary(max_size=50),
            st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=2),
            st.integers(0, 2**41),
        ),
        min_size=1,
        max_size=10,
    ),
    base=st.integers(0, 2**50),
)
def test_build_decode_property(
    rows: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]], base: int
) -> None:
    data = rb.build_batch(rows, base_offset=base)
    (header,) = rb.read_batches(data)
    assert header.record_count == len(rows) and header.next_offset == base + len(rows)
    assert header.max_timestamp == max(r[3] for r in rows)
    decoded = rb.decode_records(data)
    assert [(r.key, r.value, r.headers, r.timestamp) for r in decoded] == [
        (k, v, list(h), t) for k, v, h, t in rows
    ]
    assert [r.offset for r in decoded] == list(range(base, base + len(rows)))


# -- malformed input ---------------------------------------------------------------------------


def _error(data: bytes | bytearray) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        rb.read_batches(data)
    assert info.value.api == "RecordBatch" and info.value.version is None
    return info.value


def test_truncated_header_and_body() -> None:
    data = _batch(2)
    assert _error(data[:8]).field == "BatchLength"
    error = _error(data[:-1])
    assert error.field == "BatchLength" and "exceeds" in error.reason
    assert _error(data + data[:30]).field == "BatchLength"


def test_partial_tail_is_ignored_only_when_allowed() -> None:
    data = _batch(2) + _batch(3, base_offset=2)
    cut = data[:-7]
    assert len(rb.read_batches(cut, allow_partial_tail=True)) == 1
    assert len(rb.read_batches(data[: len(_batch(2)) + 5], allow_partial_tail=True)) == 1
    assert [r.offset for r in rb.decode_records(cut)] == [0, 1]
    _error(cut)


def test_batch_length_below_the_header_size() -> None:
    data = bytearray(_batch(1))
    struct.pack_into(">i", data, 8, 20)
    error = _error(data)
    assert error.field == "BatchLength" and "minimum" in error.reason


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets_are_rejected_clearly(magic: int) -> None:
    # A v0/v1 message: offset, size, crc, magic, attributes, (timestamp), key, value.
    body = struct.pack(">Ib", 0, magic) + b"\x00" + (b"\x00" * 8 if magic else b"") + b"\xff\xff\xff\xff" * 2
    message = struct.pack(">qi", 0, len(body)) + body
    error = _error(message)
    assert error.field == "Magic" and f"magic {magic}" in error.reason and "v2" in error.reason
    # Also when the old message is long enough to look like a v2 header.
    long_body = struct.pack(">Ib", 0, magic) + b"\x00" * 70
    error = _error(struct.pack(">qi", 0, len(long_body)) + long_body)
    assert error.field == "Magic" and "pre-0.11" in error.reason


def test_unknown_magic_and_codec_and_counts() -> None:
    data = bytearray(_batch(2))
    data[16] = 3
    assert _error(data).field == "Magic"
    data = bytearray(_batch(2))
    struct.pack_into(">h", data, 21, 5)
    assert _error(data).field == "Attributes"
    data = bytearray(_batch(2))
    struct.pack_into(">i", data, 57, -1)
    assert _error(data).field == "RecordCount"
    struct.pack_into(">i", data, 57, 10_000)
    assert _error(data).field == "RecordCount"
    data = bytearray(_batch(2))
    struct.pack_into(">i", data, 23, -4)
    assert _error(data).field == "LastOffsetDelta"


def test_corrupt_records_decode_to_protocol_error() -> None:
    data = bytearray(_batch(2))
    data[rb.BATCH_HEADER_SIZE] = 0x7F  # first record's length varint: far too long
    with pytest.raises(ProtocolError) as info:
        rb.decode_records(data)
    assert info.value.field == "Records"


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=120))
def test_random_bytes_raise_only_protocol_error(data: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        rb.read_batches(data)


@settings(max_examples=200, deadline=None)
@given(position=st.integers(0, 200), value=st.integers(0, 255), cut=st.integers(0, 300))
def test_mutated_batches_raise_only_protocol_error(position: int, value: int, cut: int) -> None:
    data = bytearray(_batch(3) + _batch(2))
    data[position % len(data)] = value
    for blob in (data, data[: cut % (len(data) + 1)]):
        with contextlib.suppress(ProtocolError):
            rb.decode_records(blob)


# -- per-batch work only ------------------------------------------------------------------------


def _calls_while(work: Callable[[], object]) -> int:
    """How many Python and builtin calls `work` makes (counted by a profile hook, not a clock)."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        work()
    finally:
        sys.setprofile(None)
    return calls


def test_scanning_and_rebasing_make_as_many_calls_for_2000_records_a_batch_as_for_2() -> None:
    small = bytearray(rb.build_batch([(None, b"v" * 100, [], T0)] * 2) * 8)
    large = bytearray(rb.build_batch([(None, b"v" * 100, [], T0)] * 2000) * 8)
    assert _calls_while(lambda: rb.assign_offsets(small, 0)) == _calls_while(
        lambda: rb.assign_offsets(large, 0)
    )
    next_offset, headers = rb.assign_offsets(large, 0)
    assert next_offset == 8 * 2000 and len(headers) == 8


def test_scanning_never_reads_the_records_inside_a_batch() -> None:
    # The records' bytes are garbage that no record decoder accepts; the batch framing is intact.
    blob = bytearray(_batch(3) + _batch(2))
    for header in rb.read_batches(blob):
        start = header.position + rb.BATCH_HEADER_SIZE
        blob[start : header.end] = b"\xff" * (header.end - start)
    with pytest.raises(ProtocolError):
        rb.decode_records(blob)
    next_offset, headers = rb.assign_offsets(blob, 40)
    assert next_offset == 45 and [h.record_count for h in headers] == [3, 2]
