"""Turning kconsumer's errors into confluent-kafka's `KafkaException` / `KafkaError`."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from ..errors import KafkaApiError


def kafka_exception(error: BaseException, fatal: bool = False) -> KafkaException:
    """A KafkaException carrying a KafkaError with Kafka's code (or ``_FAIL``) and the message;
    the original exception is its ``__cause__``."""
    if isinstance(error, KafkaException):
        return error
    if isinstance(error, KafkaApiError):
        kafka_error = KafkaError(int(error.code), str(error), fatal=fatal, retriable=error.retriable)
    else:
        kafka_error = KafkaError(KafkaError._FAIL, f"{type(error).__name__}: {error}", fatal=fatal)
    exception = KafkaException(kafka_error)
    exception.__cause__ = error
    return exception
