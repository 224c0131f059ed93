"""The in-memory log: appends rewrite base offsets only, reads return whole stored batches."""

from __future__ import annotations

import pytest

from kconsumer.broker.coordinator import MetadataImage
from kconsumer.broker.server.log import (
    InvalidRecords,
    PartitionLog,
    Topics,
    topic_name_error,
    validate_records,
)
from kconsumer.errors import ErrorCode
from kconsumer.protocol import records as rb
from kconsumer.protocol.uuid import Uuid


def batch(values: list[bytes], timestamp: int = 1000, timestamps: list[int] | None = None) -> bytes:
    stamps = timestamps or [timestamp] * len(values)
    return rb.build_batch((None, v, (), ts) for v, ts in zip(values, stamps, strict=True))


def append(log: PartitionLog, data: bytes) -> int:
    blob, headers = validate_records(data, verify_crc=True)
    return log.append(blob, headers)


def test_append_assigns_consecutive_offsets_and_keeps_crc_valid() -> None:
    log = PartitionLog()
    assert append(log, batch([b"a", b"b", b"c"])) == 0
    assert append(log, batch([b"d"])) == 3
    assert log.high_watermark == 4
    chunks, size = log.read(0, 1 << 20, min_one=True)
    data = b"".join(bytes(c) for c in chunks)
    assert size == len(data)
    headers = rb.read_batches(data)
    assert [h.base_offset for h in headers] == [0, 3]
    assert all(rb.crc_is_valid(data, h) for h in headers)
    assert all(h.partition_leader_epoch == 0 for h in headers)
    decoded = rb.decode_records(data)
    assert [(r.offset, r.value) for r in decoded] == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]


def test_read_returns_the_stored_chunks_themselves() -> None:
    log = PartitionLog()
    append(log, batch([b"x"]))
    first, _ = log.read(0, 1 << 20, min_one=True)
    second, _ = log.read(0, 1 << 20, min_one=True)
    assert first[0] is second[0]  # no copy per read


def test_read_starts_at_the_batch_holding_the_offset_and_respects_limits() -> None:
    log = PartitionLog()
    for i in range(5):
        append(log, batch([b"%d-%d" % (i, j) for j in range(2)]))  # offsets 2i, 2i+1
    one = len(log.read(0, 1 << 20, min_one=True)[0][0])
    chunks, size = log.read(5, 2 * one, min_one=False)  # offset 5 is inside the batch at 4
    assert size == 2 * one
    assert [h.base_offset for h in rb.read_batches(b"".join(bytes(c) for c in chunks))] == [4, 6]
    # Below one batch: nothing, unless at least one is required.
    assert log.read(0, one - 1, min_one=False) == ([], 0)
    chunks, size = log.read(0, 1, min_one=True)
    assert len(chunks) == 1 and size == one
    assert log.read(10, 1 << 20, min_one=True) == ([], 0)


def test_retention_by_bytes_drops_whole_batches_and_moves_the_log_start() -> None:
    one = len(batch([b"v" * 100]))
    log = PartitionLog(retention_bytes=3 * one)
    for _ in range(3000):
        append(log, batch([b"v" * 100]))
    assert log.high_watermark == 3000
    assert log.size_bytes <= 3 * one
    assert log.log_start_offset == 3000 - log.batch_count
    chunks, _ = log.read(log.log_start_offset, 1 << 20, min_one=True)
    assert rb.read_batches(bytes(chunks[0]))[0].base_offset == log.log_start_offset
    # The newest batch is always kept, even when it alone exceeds the retention.
    tiny = PartitionLog(retention_bytes=1)
    append(tiny, batch([b"a"]))
    append(tiny, batch([b"b"]))
    assert tiny.batch_count == 1 and tiny.log_start_offset == 1


def test_offsets_by_timestamp() -> None:
    log = PartitionLog()
    append(log, batch([b"a", b"b"], timestamps=[100, 200]))  # 0, 1
    append(log, batch([b"c", b"d"], timestamps=[150, 400]))  # 2, 3
    append(log, batch([b"e"], timestamp=300))  # 4
    assert log.offset_for_timestamp(0) == (0, 100)
    assert log.offset_for_timestamp(150) == (1, 200)
    assert log.offset_for_timestamp(201) == (3, 400)
    assert log.offset_for_timestamp(400) == (3, 400)
    assert log.offset_for_timestamp(401) is None
    assert log.max_timestamp_offset() == (3, 400)
    assert PartitionLog().max_timestamp_offset() is None


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (None, ErrorCode.INVALID_RECORD),
        (b"", ErrorCode.INVALID_RECORD),
        (b"\x00" * 5, ErrorCode.CORRUPT_MESSAGE),
        (batch([b"a"])[:-1], ErrorCode.CORRUPT_MESSAGE),
        (batch([b"a"]) + batch([b"b"]), ErrorCode.INVALID_RECORD),
    ],
    ids=["null", "empty", "short", "truncated", "two-batches"],
)
def test_invalid_produce_payloads(data: bytes | None, code: int) -> None:
    with pytest.raises(InvalidRecords) as failure:
        validate_records(data, verify_crc=True)
    assert failure.value.error_code == code


def test_magic_crc_and_count_are_checked() -> None:
    good = bytearray(batch([b"a", b"b"]))
    old_magic = bytearray(good)
    old_magic[16] = 1
    with pytest.raises(InvalidRecords) as failure:
        validate_records(old_magic, verify_crc=True)
    assert failure.value.error_code == ErrorCode.INVALID_RECORD
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0xFF
    with pytest.raises(InvalidRecords) as failure:
        validate_records(bad_crc, verify_crc=True)
    assert failure.value.error_code == ErrorCode.CORRUPT_MESSAGE
    validate_records(bad_crc, verify_crc=False)  # the CRC check can be turned off
    bad_count = bytearray(good)
    bad_count[57:61] = (5).to_bytes(4, "big")
    with pytest.raises(InvalidRecords) as failure:
        validate_records(bad_count, verify_crc=False)
    assert failure.value.error_code in (ErrorCode.INVALID_RECORD, ErrorCode.CORRUPT_MESSAGE)


def test_topics_publish_an_image_per_change() -> None:
    images: list[MetadataImage] = []
    counter = iter(range(1, 100))
    topics = Topics(lambda: Uuid.from_int(next(counter)), on_change=images.append)
    a = topics.create("a", 2)
    topics.grow(a, 3)
    topics.create("b", 1)
    topics.delete(a)
    assert [image.version for image in images] == [1, 2, 3, 4]
    assert {t.name: t.num_partitions for t in images[1].topics_by_id.values()} == {"a": 3}
    assert set(images[-1].topics_by_name) == {"b"}
    with pytest.raises(ValueError):
        topics.grow(topics.by_name["b"], 1)


@pytest.mark.parametrize("name", ["", ".", "..", "a" * 250, "with space", "ü"])
def test_illegal_topic_names(name: str) -> None:
    assert topic_name_error(name) is not None


def test_legal_topic_names() -> None:
    assert topic_name_error("orders.v1_EU-west") is None
    assert topic_name_error("a" * 249) is None
