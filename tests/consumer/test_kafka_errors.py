"""kconsumer's errors carry confluent-kafka's codes (KafkaError.code()), not a shared _FAIL."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from kconsumer.client.kafka_errors import kafka_exception
from kconsumer.client.member.errors import CommitFailedError, PollIntervalExceededError
from kconsumer.client.member.queries import QueryTimedOutError
from kconsumer.errors import ErrorCode, KConsumerError, error_for
from kconsumer.protocol.negotiation import NoCommonVersionError


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (error_for(ErrorCode.GROUP_AUTHORIZATION_FAILED), ErrorCode.GROUP_AUTHORIZATION_FAILED),
        (PollIntervalExceededError("late"), KafkaError._MAX_POLL_EXCEEDED),
        (QueryTimedOutError("slow"), KafkaError._TIMED_OUT),
        (NoCommonVersionError(8, "too old"), KafkaError._UNSUPPORTED_FEATURE),
        (CommitFailedError("fenced", error_for(ErrorCode.STALE_MEMBER_EPOCH)), ErrorCode.STALE_MEMBER_EPOCH),
        (CommitFailedError("not this member's partitions"), KafkaError._STATE),
        (KConsumerError("an assignor of the application failed"), KafkaError._FAIL),
    ],
)
def test_codes(error: KConsumerError, code: int) -> None:
    exception = kafka_exception(error)
    assert exception.args[0].code() == code
    assert exception.__cause__ is error
    assert str(error) in exception.args[0].str()
