"""The zero-copy Fetch response writer produces exactly the generic codec's bytes."""

from __future__ import annotations

import os
import random

import pytest

from kconsumer.broker.server.fetch_encoding import COALESCE_BELOW, encode_fetch_response
from kconsumer.protocol.messages.fetch import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)
from kconsumer.protocol.messages.produce import NodeEndpoint
from kconsumer.protocol.uuid import ZERO_UUID, Uuid


def random_response(rng: random.Random, version: int) -> FetchResponse:
    topics = []
    for _ in range(rng.randint(0, 3)):
        partitions = []
        for index in range(rng.randint(0, 3)):
            records = rng.choice(
                [
                    None,
                    b"",
                    bytearray(os.urandom(rng.randint(1, 50))),
                    [os.urandom(rng.choice([3, COALESCE_BELOW + 10])) for _ in range(rng.randint(0, 3))],
                    [memoryview(bytearray(os.urandom(100)))[10:90]],
                ]
            )
            aborted = rng.choice(
                [
                    None,
                    [],
                    [AbortedTransaction(producer_id=rng.randint(0, 99), first_offset=rng.randint(0, 99))],
                ]
            )
            partitions.append(
                PartitionData(
                    partition_index=index,
                    error_code=rng.choice([0, 1, 3, -1]),
                    high_watermark=rng.randint(-1, 2**40),
                    last_stable_offset=rng.randint(-1, 2**40),
                    log_start_offset=rng.randint(-1, 2**40) if version >= 5 else -1,
                    aborted_transactions=aborted,
                    preferred_read_replica=rng.randint(-1, 3) if version >= 11 else -1,
                    records=records,
                )
            )
        topics.append(
            FetchableTopicResponse(
                topic="topic-ü" * rng.randint(0, 2) if version < 13 else "",
                topic_id=Uuid(os.urandom(16)) if version >= 13 else ZERO_UUID,
                partitions=partitions,
            )
        )
    return FetchResponse(
        throttle_time_ms=rng.randint(0, 100),
        error_code=rng.choice([0, 70]) if version >= 7 else 0,
        session_id=rng.randint(0, 5) if version >= 7 else 0,
        responses=topics,
    )


@pytest.mark.parametrize("version", range(4, 19))
def test_same_bytes_as_the_codec(version: int) -> None:
    rng = random.Random(version)
    for _ in range(40):
        response = random_response(rng, version)
        assert b"".join(encode_fetch_response(response, version)) == response.encode(version)


def test_large_chunks_are_passed_through_not_copied() -> None:
    big = bytearray(COALESCE_BELOW * 2)
    response = FetchResponse(
        responses=[
            FetchableTopicResponse(
                topic_id=Uuid.from_int(1),
                partitions=[PartitionData(partition_index=0, high_watermark=1, records=[big])],
            )
        ]
    )
    parts = encode_fetch_response(response, 16)
    assert any(part is big for part in parts)


@pytest.mark.parametrize("version", [12, 16])
def test_tagged_fields_fall_back_to_the_codec(version: int) -> None:
    response = FetchResponse(
        responses=[
            FetchableTopicResponse(
                topic="t",
                topic_id=Uuid.from_int(1),
                partitions=[
                    PartitionData(
                        partition_index=0,
                        high_watermark=1,
                        diverging_epoch=EpochEndOffset(epoch=1, end_offset=5),
                        records=b"",
                    )
                ],
            )
        ],
        node_endpoints=[NodeEndpoint(node_id=1, host="h", port=1)] if version >= 16 else [],
    )
    assert b"".join(encode_fetch_response(response, version)) == response.encode(version)
