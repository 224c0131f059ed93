"""InitProducerId (22): a producer id and epoch for an idempotent (or transactional) producer."""

from __future__ import annotations

from ..schema import Message, field
from ..types import INT16, INT32, INT64, STRING


class InitProducerIdRequest(Message, api_key=22, valid="0-5", flexible="2+"):
    """A new producer id (no transactional id), or the next epoch of the one given (v3+)."""

    transactional_id: str | None = field(STRING, "0+", nullable="0+", default=None)
    transaction_timeout_ms: int = field(INT32, "0+", default=60000)
    producer_id: int = field(INT64, "3+", default=-1)
    producer_epoch: int = field(INT16, "3+", default=-1)


class InitProducerIdResponse(Message, api_key=22, valid="0-5", flexible="2+"):
    throttle_time_ms: int = field(INT32, "0+")
    error_code: int = field(INT16, "0+")
    producer_id: int = field(INT64, "0+", default=-1)
    producer_epoch: int = field(INT16, "0+", default=-1)
