"""The registry of APIs we speak, and request/response encoding with headers and framing.

`API_SPECS` maps each API key to its request and response messages; the versions a message class
declares are the versions kconsumer implements (see docs/protocol.md for who uses which).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import ProtocolError
from .headers import (
    RequestHeader,
    decode_request_header,
    decode_response_header,
    encode_request_header,
    encode_response_header,
    frame,
    skip_tagged_fields,
)
from .messages import all_message_pairs
from .schema import Message
from .types import Reader
from .versions import Versions


class ApiKey(enum.IntEnum):
    """Kafka API keys used by kconsumer (plus its extension APIs: client-side assignment, worker groups)."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    TXN_OFFSET_COMMIT = 28
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    OFFSET_DELETE = 47
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONSUMER_GROUP_PREPARE_ASSIGNMENT = 32000
    CONSUMER_GROUP_INSTALL_ASSIGNMENT = 32001
    CONNECT_GROUP_HEARTBEAT = 32002
    CONNECT_GROUP_PREPARE_ASSIGNMENT = 32003
    CONNECT_GROUP_INSTALL_ASSIGNMENT = 32004


@dataclass(frozen=True)
class ApiSpec:
    """One API: its key, name, message classes and the versions we implement."""

    key: int
    name: str
    request: type[Message]
    response: type[Message]

    @property
    def versions(self) -> Versions:
        return self.request.VALID_VERSIONS

    def is_flexible(self, version: int) -> bool:
        return self.request.is_flexible(version)

    def request_header_version(self, version: int) -> int:
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        # KIP-511: the ApiVersions response always uses header v0, so any client can read it.
        if self.key == ApiKey.API_VERSIONS:
            return 0
        return 1 if self.is_flexible(version) else 0


def _build_registry() -> dict[int, ApiSpec]:
    registry: dict[int, ApiSpec] = {}
    for request, response in all_message_pairs():
        assert request.API_KEY == response.API_KEY, (request, response)
        assert request.VALID_VERSIONS == response.VALID_VERSIONS, (request, response)
        assert request.FLEXIBLE_VERSIONS == response.FLEXIBLE_VERSIONS, (request, response)
        name = request.__name__.removesuffix("Request")
        registry[request.API_KEY] = ApiSpec(request.API_KEY, name, request, response)
    return registry


API_SPECS: dict[int, ApiSpec] = _build_registry()


def spec_for(api_key: int) -> ApiSpec:
    """The spec of `api_key`, or a ProtocolError naming the unknown key."""
    spec = API_SPECS.get(api_key)
    if spec is None:
        raise ProtocolError("RequestHeader", None, "RequestApiKey", f"unknown API key {api_key}")
    return spec


def encode_request(body: Message, version: int, correlation_id: int, client_id: str | None) -> bytes:
    """A complete request frame: size, header (v1 or v2) and body."""
    spec = spec_for(body.API_KEY)
    header = RequestHeader(body.API_KEY, version, correlation_id, client_id)
    return frame(encode_request_header(header, spec.is_flexible(version)) + body.encode(version))


def decode_request(payload: bytes) -> tuple[RequestHeader, Message]:
    """Header and body of a request frame's payload. Raises ProtocolError (unknown key or version too)."""
    reader = Reader(payload)
    header = decode_request_header(reader)
    spec = spec_for(header.api_key)
    if header.api_version not in spec.versions:
        raise ProtocolError(
            spec.request.__name__,
            header.api_version,
            None,
            f"unsupported version (we implement {spec.versions})",
        )
    if spec.is_flexible(header.api_version):
        skip_tagged_fields(reader, "RequestHeader")
    return header, spec.request.decode(reader, header.api_version)


def encode_response(body: Message, version: int, correlation_id: int) -> bytes:
    """A complete response frame: size, header (v0 or v1) and body."""
    spec = spec_for(body.API_KEY)
    flexible_header = spec.response_header_version(version) == 1
    return frame(encode_response_header(correlation_id, flexible_header) + body.encode(version))


def decode_response(payload: bytes, api_key: int, version: int, strict: bool = False) -> tuple[int, Message]:
    """Correlation id and body of a response frame's payload to a request of `api_key` at `version`.

    Trailing bytes after the body are ignored unless `strict` (clients are lenient readers)."""
    correlation_id, body, trailing = decode_response_prefix(payload, api_key, version)
    if trailing and strict:
        raise ProtocolError(body.__class__.__name__, version, None, f"{trailing} unexpected trailing bytes")
    return correlation_id, body


def decode_response_prefix(payload: bytes, api_key: int, version: int) -> tuple[int, Message, int]:
    """(correlation id, body, bytes left after the body) of a response frame's payload."""
    spec = spec_for(api_key)
    reader = Reader(payload)
    correlation_id = decode_response_header(reader, spec.response_header_version(version) == 1)
    body, trailing = spec.response.decode_prefix(reader, version)
    return correlation_id, body, trailing


def peek_correlation_id(payload: bytes) -> int:
    """The correlation id at the start of a response payload (every header version starts with it)."""
    if len(payload) < 4:
        raise ProtocolError("ResponseHeader", None, "CorrelationId", "truncated header")
    return int.from_bytes(payload[:4], "big", signed=True)
