"""Wire types of Kafka's message definitions, on top of aiokafka's primitives.

Each type turns into an encoder and a decoder for one encoding (flexible or not), so a message
version compiles once into a list of plain callables. Adds what aiokafka lacks: the ``uuid`` type,
``records``, nullable structs, and arrays whose elements are our structs (with their own tagged
fields); see `kconsumer.protocol.schema` for structs themselves.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Any

from . import _aiokafka as ak
from .uuid import ZERO_UUID, Uuid

Encoder = Callable[[Any], bytes]
Decoder = Callable[["Reader"], Any]


class DecodeFailure(Exception):
    """Raised while decoding; carries the field path, outermost first. Internal to the codec."""

    def __init__(self, reason: str, path: list[str] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path = path if path is not None else []


class Reader(io.BytesIO):
    """A byte stream that knows how many bytes are left, so lengths can be checked before use."""

    def __init__(self, data: bytes | bytearray | memoryview) -> None:
        super().__init__(data)
        self.size = len(data)

    def remaining(self) -> int:
        return self.size - self.tell()

    def take(self, count: int) -> bytes:
        """Exactly `count` bytes, or a DecodeFailure."""
        if count < 0 or count > self.size - self.tell():
            raise DecodeFailure(f"length {count} exceeds the {self.remaining()} bytes left")
        return self.read(count)


class KafkaType:
    """A wire type. Subclasses build encoders and decoders for one encoding."""

    name = "?"
    #: Whether the type has a null value on the wire (strings, bytes, arrays, structs, records).
    can_be_null = False

    def encoder(self, flexible: bool) -> Encoder:
        raise NotImplementedError

    def decoder(self, flexible: bool) -> Decoder:
        raise NotImplementedError

    def default(self) -> Any:
        """The type default Kafka's generated code uses when a field has no explicit default."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.name


class _Fixed(KafkaType):
    def __init__(self, name: str, prim: Any, width: int, default: Any) -> None:
        self.name = name
        self._prim = prim
        self.width = width
        self._default = default

    def encoder(self, flexible: bool) -> Encoder:
        encode: Encoder = self._prim.encode
        return encode

    def decoder(self, flexible: bool) -> Decoder:
        decode = self._prim.decode
        width = self.width

        def read_fixed(r: Reader) -> Any:
            if r.size - r.tell() < width:
                raise DecodeFailure(f"needs {width} bytes, {r.remaining()} left")
            return decode(r)

        return read_fixed

    def default(self) -> Any:
        return self._default


INT8 = _Fixed("int8", ak.Int8, 1, 0)
INT16 = _Fixed("int16", ak.Int16, 2, 0)
INT32 = _Fixed("int32", ak.Int32, 4, 0)
INT64 = _Fixed("int64", ak.Int64, 8, 0)
UINT32 = _Fixed("uint32", ak.UInt32, 4, 0)
FLOAT64 = _Fixed("float64", ak.Float64, 8, 0.0)


class _Bool(_Fixed):
    def decoder(self, flexible: bool) -> Decoder:
        decode = ak.Int8.decode

        def read_bool(r: Reader) -> bool:
            if r.size - r.tell() < 1:
                raise DecodeFailure("needs 1 byte, 0 left")
            return bool(decode(r))

        return read_bool


BOOL = _Bool("bool", ak.Boolean, 1, False)


class _Uuid(KafkaType):
    name = "uuid"

    def encoder(self, flexible: bool) -> Encoder:
        def write_uuid(value: Uuid) -> bytes:
            return value.bytes

        return write_uuid

    def decoder(self, flexible: bool) -> Decoder:
        def read_uuid(r: Reader) -> Uuid:
            return Uuid(r.take(16))

        return read_uuid

    def default(self) -> Uuid:
        return ZERO_UUID


UUID = _Uuid()


def read_uvarint(r: Reader) -> int:
    """An unsigned varint (at most 5 bytes), via aiokafka."""
    if r.size - r.tell() < 1:
        raise DecodeFailure("needs a varint, 0 bytes left")
    try:
        value: int = ak.UnsignedVarInt32.decode(r)
    except Exception as exc:  # truncated or over-long varint
        raise DecodeFailure(f"bad unsigned varint ({exc})") from None
    return value


write_uvarint: Callable[[int], bytes] = ak.UnsignedVarInt32.encode
write_int16: Callable[[int], bytes] = ak.Int16.encode
write_int32: Callable[[int], bytes] = ak.Int32.encode
_read_int16 = ak.Int16.decode
_read_int32 = ak.Int32.decode


def _read_length(r: Reader, flexible: bool, wide: bool) -> int:
    """A length prefix; -1 means null. `wide` selects int32 over int16 for classic encodings."""
    if flexible:
        return read_uvarint(r) - 1
    need = 4 if wide else 2
    if r.size - r.tell() < need:
        raise DecodeFailure(f"needs a {need}-byte length, {r.remaining()} left")
    length: int = _read_int32(r) if wide else _read_int16(r)
    if length < -1:
        raise DecodeFailure(f"negative length {length}")
    return length


class _String(KafkaType):
    name = "string"
    can_be_null = True

    def encoder(self, flexible: bool) -> Encoder:
        encode: Encoder = (ak.CompactString("utf-8") if flexible else ak.String("utf-8")).encode
        return encode

    def decoder(self, flexible: bool) -> Decoder:
        def read_string(r: Reader) -> str | None:
            length = _read_length(r, flexible, wide=False)
            if length < 0:
                return None
            raw = r.take(length)
            try:
                return raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DecodeFailure(f"invalid UTF-8 ({exc.reason})") from None

        return read_string

    def default(self) -> str:
        return ""


STRING = _String()


class _Bytes(KafkaType):
    name = "bytes"
    can_be_null = True

    def encoder(self, flexible: bool) -> Encoder:
        prim = ak.CompactBytes if flexible else ak.Bytes

        def write_bytes(value: bytes | bytearray | memoryview | None) -> bytes:
            if value is not None and not isinstance(value, bytes):
                value = bytes(value)
            encoded: bytes = prim.encode(value)
            return encoded

        return write_bytes

    def decoder(self, flexible: bool) -> Decoder:
        def read_bytes(r: Reader) -> bytes | None:
            length = _read_length(r, flexible, wide=True)
            if length < 0:
                return None
            return r.take(length)

        return read_bytes

    def default(self) -> bytes:
        return b""


BYTES = _Bytes()


class _Records(KafkaType):
    """Record batches, kept as raw bytes (never re-encoded). A sequence of chunks may be encoded."""

    name = "records"
    can_be_null = True

    def encoder(self, flexible: bool) -> Encoder:
        def write_records(value: Any) -> bytes:
            if value is None:
                return write_uvarint(0) if flexible else write_int32(-1)
            if isinstance(value, (bytes, bytearray, memoryview)):
                chunks: Sequence[Any] = (value,)
            else:
                chunks = value
            size = sum(len(c) for c in chunks)
            prefix = write_uvarint(size + 1) if flexible else write_int32(size)
            return b"".join((prefix, *chunks))

        return write_records

    def decoder(self, flexible: bool) -> Decoder:
        return BYTES.decoder(flexible)

    def default(self) -> None:
        return None


RECORDS = _Records()


class Array(KafkaType):
    """An array of a primitive type or of a struct class."""

    can_be_null = True

    def __init__(self, element: Any) -> None:
        from .schema import as_type

        self.element: KafkaType = as_type(element)
        self.name = f"[]{self.element.name}"

    def encoder(self, flexible: bool) -> Encoder:
        encode_item = self.element.encoder(flexible)
        item_can_be_null = False

        def write_array(items: Sequence[Any] | None) -> bytes:
            if items is None:
                return write_uvarint(0) if flexible else write_int32(-1)
            parts = [write_uvarint(len(items) + 1) if flexible else write_int32(len(items))]
            for index, item in enumerate(items):
                if item is None and not item_can_be_null:
                    raise DecodeFailure("null array element", [f"[{index}]"])
                try:
                    parts.append(encode_item(item))
                except DecodeFailure as exc:
                    exc.path.insert(0, f"[{index}]")
                    raise
            return b"".join(parts)

        return write_array

    def decoder(self, flexible: bool) -> Decoder:
        decode_item = self.element.decoder(flexible)

        def read_array(r: Reader) -> list[Any] | None:
            length = _read_length(r, flexible, wide=True)
            if length < 0:
                return None
            if length > r.size - r.tell():
                raise DecodeFailure(f"array of {length} elements exceeds the {r.remaining()} bytes left")
            items = []
            for index in range(length):
                try:
                    items.append(decode_item(r))
                except DecodeFailure as exc:
                    exc.path.insert(0, f"[{index}]")
                    raise
            return items

        return read_array

    def default(self) -> list[Any]:
        return []
