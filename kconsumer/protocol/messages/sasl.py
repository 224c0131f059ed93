"""SaslHandshake (17) and SaslAuthenticate (36), the versions Kafka 4.x serves.

SaslHandshake v0-1 (never flexible): the client names a mechanism, the broker answers with its
enabled mechanisms (UNSUPPORTED_SASL_MECHANISM when the name is not one of them). From v1 the
mechanism's tokens travel inside SaslAuthenticate requests (v0-2, flexible from v2); v1 added
SessionLifetimeMs (KIP-368: re-authenticate before it runs out, 0 = no limit).
"""

from __future__ import annotations

from ..schema import Message, field
from ..types import BYTES, INT16, INT64, STRING, Array


class SaslHandshakeRequest(Message, api_key=17, valid="0-1", flexible="none"):
    mechanism: str = field(STRING, "0+")


class SaslHandshakeResponse(Message, api_key=17, valid="0-1", flexible="none"):
    error_code: int = field(INT16, "0+")
    mechanisms: list[str] = field(Array(STRING), "0+")


class SaslAuthenticateRequest(Message, api_key=36, valid="0-2", flexible="2+"):
    auth_bytes: bytes = field(BYTES, "0+")


class SaslAuthenticateResponse(Message, api_key=36, valid="0-2", flexible="2+"):
    error_code: int = field(INT16, "0+")
    error_message: str | None = field(STRING, "0+", nullable="0+", default=None)
    auth_bytes: bytes = field(BYTES, "0+")
    session_lifetime_ms: int = field(INT64, "1+", ignorable=True)
