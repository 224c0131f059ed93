"""Request and response headers, and the int32 size framing around every Kafka message.

* RequestHeader v1: ApiKey int16, ApiVersion int16, CorrelationId int32, ClientId nullable string.
  v2 (flexible APIs) adds a tagged-field section; ClientId keeps its int16 length even there.
* ResponseHeader v0: CorrelationId int32; v1 adds a tagged-field section.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ProtocolError
from . import _aiokafka as ak
from .types import DecodeFailure, Reader, read_uvarint

#: Kafka's ``socket.request.max.bytes`` default: frames larger than this are refused.
DEFAULT_MAX_FRAME_BYTES = 100 * 1024 * 1024

_CLIENT_ID = ak.String("utf-8")
_EMPTY_TAGS = ak.UnsignedVarInt32.encode(0)


@dataclass(frozen=True)
class RequestHeader:
    """The header in front of every request body."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def encode_request_header(header: RequestHeader, flexible: bool) -> bytes:
    """Header v2 when `flexible`, else v1."""
    parts = [
        ak.Int16.encode(header.api_key),
        ak.Int16.encode(header.api_version),
        ak.Int32.encode(header.correlation_id),
        _CLIENT_ID.encode(header.client_id),
    ]
    if flexible:
        parts.append(_EMPTY_TAGS)
    return b"".join(parts)


def decode_request_header(reader: Reader) -> RequestHeader:
    """The v1 part of a request header (the part every version shares). Tags are read separately."""
    try:
        if reader.remaining() < 10:
            raise DecodeFailure(f"needs at least 10 header bytes, {reader.remaining()} left")
        api_key = ak.Int16.decode(reader)
        api_version = ak.Int16.decode(reader)
        correlation_id = ak.Int32.decode(reader)
        length = ak.Int16.decode(reader)
        if length < -1:
            raise DecodeFailure(f"negative ClientId length {length}", ["ClientId"])
        if length > reader.remaining():
            raise DecodeFailure(f"length {length} exceeds the {reader.remaining()} bytes left", ["ClientId"])
        client_id = None if length < 0 else reader.take(length).decode("utf-8", "replace")
    except DecodeFailure as exc:
        raise ProtocolError("RequestHeader", None, ".".join(exc.path) or None, exc.reason) from None
    return RequestHeader(api_key, api_version, correlation_id, client_id)


def skip_tagged_fields(reader: Reader, what: str) -> None:
    """Read and discard a tagged-field section (headers carry none we use)."""
    try:
        count = read_uvarint(reader)
        for _ in range(count):
            read_uvarint(reader)
            reader.take(read_uvarint(reader))
    except DecodeFailure as exc:
        raise ProtocolError(what, None, "TaggedFields", exc.reason) from None


def encode_response_header(correlation_id: int, flexible: bool) -> bytes:
    """Header v1 when `flexible`, else v0."""
    encoded: bytes = ak.Int32.encode(correlation_id)
    return encoded + _EMPTY_TAGS if flexible else encoded


def decode_response_header(reader: Reader, flexible: bool) -> int:
    """The correlation id; skips the tags of a v1 header."""
    if reader.remaining() < 4:
        raise ProtocolError("ResponseHeader", None, "CorrelationId", "truncated header")
    correlation_id: int = ak.Int32.decode(reader)
    if flexible:
        skip_tagged_fields(reader, "ResponseHeader")
    return correlation_id


def frame(payload: bytes) -> bytes:
    """Prefix `payload` with its int32 size."""
    prefix: bytes = ak.Int32.encode(len(payload))
    return prefix + payload


def frame_size(prefix: bytes, max_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> int:
    """The size announced by a 4-byte frame prefix, checked against `max_bytes`."""
    size: int = ak.Int32.decode(Reader(prefix))
    if size < 0:
        raise ProtocolError("Frame", None, "Size", f"negative frame size {size}")
    if size > max_bytes:
        raise ProtocolError(
            "Frame", None, "Size", f"frame of {size} bytes exceeds the {max_bytes}-byte limit"
        )
    return size


class FrameBuffer:
    """Splits a byte stream into frames (the payloads, without their size prefix)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._max_bytes = max_bytes

    def feed(self, data: bytes) -> list[bytes]:
        """Add received bytes; return every frame now complete. Raises ProtocolError on a bad size."""
        self._buffer += data
        frames = []
        while len(self._buffer) >= 4:
            size = frame_size(bytes(self._buffer[:4]), self._max_bytes)
            if len(self._buffer) < 4 + size:
                break
            frames.append(bytes(self._buffer[4 : 4 + size]))
            del self._buffer[: 4 + size]
        return frames
