"""Turning kconsumer's errors into confluent-kafka's `KafkaException` / `KafkaError`, with the
code confluent-kafka uses for the same failure, so code that branches on ``KafkaError.code()``
keeps working: Kafka's own code for a broker's answer; for kconsumer's own failures librdkafka's
local codes (`_LOCAL_CODES`); ``_FAIL`` only for what has no counterpart (an assignor of the
application failing, for instance)."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from ..errors import ErrorCode, KafkaApiError, KConsumerError
from ..protocol.negotiation import NoCommonVersionError
from .member.errors import CommitFailedError, PollIntervalExceededError, UnsupportedFeatureError
from .member.queries import QueryTimedOutError

#: kconsumer's own errors -> the librdkafka code of the same failure.
_LOCAL_CODES: dict[type[KConsumerError], int] = {
    PollIntervalExceededError: KafkaError._MAX_POLL_EXCEEDED,
    QueryTimedOutError: KafkaError._TIMED_OUT,
    NoCommonVersionError: KafkaError._UNSUPPORTED_FEATURE,
    UnsupportedFeatureError: KafkaError._UNSUPPORTED_FEATURE,
}


#: Broker codes librdkafka reports under a local code of its own.
_BROKER_TO_LOCAL = {ErrorCode.SASL_AUTHENTICATION_FAILED: KafkaError._AUTHENTICATION}


def kafka_code(error: BaseException) -> int:
    """The KafkaError code confluent-kafka reports for `error`."""
    if isinstance(error, KafkaApiError):
        return _BROKER_TO_LOCAL.get(error.code, int(error.code))
    if isinstance(error, CommitFailedError):
        return kafka_code(error.cause) if error.cause is not None else KafkaError._STATE
    for kind, code in _LOCAL_CODES.items():
        if isinstance(error, kind):
            return code
    return KafkaError._FAIL


def kafka_exception(error: BaseException, fatal: bool = False) -> KafkaException:
    """A KafkaException carrying a KafkaError with confluent-kafka's code for `error` and the
    message; the original exception is its ``__cause__``."""
    if isinstance(error, KafkaException):
        return error
    code = kafka_code(error)
    retriable = isinstance(error, KafkaApiError) and error.retriable
    text = str(error) if code != KafkaError._FAIL else f"{type(error).__name__}: {error}"
    exception = KafkaException(KafkaError(code, text, fatal=fatal, retriable=retriable))
    exception.__cause__ = error
    return exception
