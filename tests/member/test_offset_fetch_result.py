"""Reading an OffsetFetch answer (`offset_requests.fetch_result`): which error counts, and which
partitions' topics are gone."""

from __future__ import annotations

from member_driver import tp

from kconsumer.client.member.offset_requests import fetch_result
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.offsets import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopics,
)


def _answer(codes: dict[str, int]) -> OffsetFetchResponse:
    """A v10 answer for partition 0 of each topic in `codes` (committed offset 7 where no error)."""
    topics = [
        OffsetFetchResponseTopics(
            name="",
            topic_id=tp(name, 0).topic_id,
            partitions=[
                OffsetFetchResponsePartitions(
                    partition_index=0,
                    committed_offset=-1 if code else 7,
                    committed_leader_epoch=-1,
                    metadata="",
                    error_code=code,
                )
            ],
        )
        for name, code in codes.items()
    ]
    group = OffsetFetchResponseGroup(group_id="g", topics=topics, error_code=0)
    return OffsetFetchResponse(throttle_time_ms=0, topics=[], error_code=0, groups=[group])


def test_partitions_of_deleted_topics_are_reported_gone_beside_the_offsets_of_the_others() -> None:
    asked = (tp("foo", 0), tp("bar", 0))
    code, offsets, gone = fetch_result(
        _answer({"foo": 0, "bar": ErrorCode.UNKNOWN_TOPIC_ID.value}), 10, asked
    )
    assert code is ErrorCode.UNKNOWN_TOPIC_ID
    assert [(o.partition, o.offset) for o in offsets] == [(tp("foo", 0), 7)]
    assert gone == (tp("bar", 0),)


def test_another_error_wins_over_a_gone_topic_so_that_the_fetch_is_retried() -> None:
    asked = (tp("foo", 0), tp("bar", 0))
    answer = _answer({"bar": ErrorCode.UNKNOWN_TOPIC_ID.value, "foo": ErrorCode.UNSTABLE_OFFSET_COMMIT.value})
    code, offsets, gone = fetch_result(answer, 10, asked)
    assert code is ErrorCode.UNSTABLE_OFFSET_COMMIT
    assert offsets == () and gone == (tp("bar", 0),)
