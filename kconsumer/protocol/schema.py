"""Structs and messages declared the way Kafka's JSON message definitions declare them.

A struct is a class whose attributes are `field(...)` specs::

    class TopicPartitions(Struct):
        topic_id: Uuid = field(UUID, "0+")
        partitions: list[int] = field(Array(INT32), "0+")

    class ConsumerGroupHeartbeatResponse(Message, api_key=68, valid="0-1", flexible="0+"):
        error_code: int = field(INT16, "0+")
        assignment: Assignment | None = field(Assignment, "0+", nullable="0+", default=None)

Each field has the versions it exists in, the versions it may be null in, a default, and
optionally a tag (tagged fields are only written in flexible versions and only when they differ
from their default). Nested structs follow the message's version, as in Kafka. Instances are plain
objects with keyword construction, equality and a readable repr.

A (struct, version) pair compiles once into lists of encoders and decoders; decoding failures
become `ProtocolError` naming the message, version and field path.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar, TypeVar

from ..errors import ProtocolError
from .types import (
    DecodeFailure,
    Decoder,
    Encoder,
    KafkaType,
    Reader,
    read_uvarint,
    write_uvarint,
)
from .versions import Versions

_MISSING: Any = object()

S = TypeVar("S", bound="Struct")
M = TypeVar("M", bound="Message")


def _kafka_name(python_name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in python_name.split("_"))


class FieldSpec:
    """One field of a struct: its wire type and the versions it exists, is nullable and is tagged in."""

    __slots__ = (
        "_default",
        "ignorable",
        "kafka_name",
        "name",
        "nullable",
        "tag",
        "tagged",
        "type",
        "versions",
    )

    def __init__(
        self,
        type_: KafkaType,
        versions: Versions,
        nullable: Versions,
        default: Any,
        tag: int | None,
        tagged: Versions,
        ignorable: bool,
        kafka_name: str | None,
    ) -> None:
        self.type = type_
        self.versions = versions
        self.nullable = nullable
        self._default = default
        self.tag = tag
        self.tagged = tagged
        self.ignorable = ignorable
        self.kafka_name = kafka_name or ""
        self.name = ""

    def default(self) -> Any:
        """A fresh default value (lists and structs are never shared between instances)."""
        if self._default is _MISSING:
            return self.type.default()
        if isinstance(self._default, (list, dict, Struct)):
            return copy.deepcopy(self._default)
        return self._default

    def is_tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged


def field(
    type_: Any,
    versions: str = "0+",
    *,
    nullable: str = "none",
    default: Any = _MISSING,
    tag: int | None = None,
    tagged: str | None = None,
    ignorable: bool = False,
    name: str | None = None,
) -> Any:
    """Declare a struct field (see the module docstring). `name` overrides the Kafka field name."""
    if tag is not None and tagged is None:
        tagged = versions
    return FieldSpec(
        as_type(type_),
        Versions.parse(versions),
        Versions.parse(nullable),
        default,
        tag,
        Versions.parse(tagged or "none"),
        ignorable,
        name,
    )


class StructType(KafkaType):
    """A nested struct used as a field or array element."""

    def __init__(self, struct: type[Struct]) -> None:
        self.struct = struct
        self.name = struct.__name__
        self.can_be_null = True

    # A struct's codec depends on the message version, so _bind builds it; these never run.
    def encoder(self, flexible: bool) -> Encoder:  # pragma: no cover
        raise AssertionError("struct codecs are bound per version by _bind")

    def decoder(self, flexible: bool) -> Decoder:  # pragma: no cover
        raise AssertionError("struct codecs are bound per version by _bind")

    def default(self) -> Struct:
        return self.struct()


def as_type(value: Any) -> KafkaType:
    """A KafkaType for a KafkaType or a Struct subclass."""
    if isinstance(value, KafkaType):
        return value
    if isinstance(value, type) and issubclass(value, Struct):
        return StructType(value)
    raise TypeError(f"not a Kafka type: {value!r}")


class _Compiled:
    """Encoders and decoders of one struct at one version."""

    __slots__ = ("absent", "flexible", "present", "tagged_by_tag", "tagged_sorted")

    def __init__(self, struct: type[Struct], version: int, flexible: bool) -> None:
        self.flexible = flexible
        # (name, kafka name, encoder, decoder, nullable)
        self.present: list[tuple[str, str, Encoder, Decoder, bool]] = []
        self.absent: list[FieldSpec] = []
        self.tagged_by_tag: dict[int, tuple[FieldSpec, Encoder, Decoder]] = {}
        self.tagged_sorted: list[tuple[int, FieldSpec, Encoder]] = []
        for spec in struct.__kafka_fields__:
            if version not in spec.versions:
                self.absent.append(spec)
                continue
            nullable = version in spec.nullable
            if spec.is_tagged_in(version):
                if not flexible:
                    raise TypeError(f"{struct.__name__}.{spec.name}: tagged in non-flexible v{version}")
                enc, dec = _bind(spec.type, version, flexible, nullable, tagged=True)
                assert spec.tag is not None
                self.tagged_by_tag[spec.tag] = (spec, enc, dec)
                self.tagged_sorted.append((spec.tag, spec, enc))
            else:
                enc, dec = _bind(spec.type, version, flexible, nullable, tagged=False)
                self.present.append((spec.name, spec.kafka_name, enc, dec, nullable))
        self.tagged_sorted.sort(key=lambda item: item[0])


def _bind(
    type_: KafkaType, version: int, flexible: bool, nullable: bool, tagged: bool
) -> tuple[Encoder, Decoder]:
    """Encoder and decoder of a field's type at a version, with its null handling."""
    from .types import Array

    if isinstance(type_, StructType):
        struct = type_.struct
        if nullable:
            return _nullable_struct_codec(struct, version, flexible, tagged)

        def write_struct(value: Struct) -> bytes:
            if value is None:
                raise DecodeFailure("null value in a non-nullable struct field")
            return struct._encode_at(value, version, flexible)

        def read_struct(r: Reader) -> Struct:
            return struct._decode_at(r, version, flexible)

        return write_struct, read_struct
    if isinstance(type_, Array) and isinstance(type_.element, StructType):
        # Arrays of structs: bind the element to the version too.
        element_enc, element_dec = _bind(type_.element, version, flexible, False, False)
        array = Array(_BoundElement(element_enc, element_dec))
        enc, dec = array.encoder(flexible), array.decoder(flexible)
    else:
        enc, dec = type_.encoder(flexible), type_.decoder(flexible)
    if nullable or not type_.can_be_null:
        return enc, dec

    def write_not_null(value: Any) -> bytes:
        if value is None:
            raise DecodeFailure("null value in a non-nullable field")
        return enc(value)

    def read_not_null(r: Reader) -> Any:
        value = dec(r)
        if value is None:
            raise DecodeFailure("null in a non-nullable field")
        return value

    return write_not_null, read_not_null


class _BoundElement(KafkaType):
    """A struct element whose codec is already bound to a version."""

    name = "struct"

    def __init__(self, enc: Encoder, dec: Decoder) -> None:
        self._enc = enc
        self._dec = dec

    def encoder(self, flexible: bool) -> Encoder:
        return self._enc

    def decoder(self, flexible: bool) -> Decoder:
        return self._dec


def _nullable_struct_codec(
    struct: type[Struct], version: int, flexible: bool, tagged: bool
) -> tuple[Encoder, Decoder]:
    """Kafka's nullable struct: an int8 marker (-1 null, 1 present), or a uvarint one when tagged."""
    if tagged:
        null_marker, present_marker = write_uvarint(0), write_uvarint(1)
    else:
        null_marker, present_marker = b"\xff", b"\x01"

    def write_nullable_struct(value: Struct | None) -> bytes:
        if value is None:
            return null_marker
        return present_marker + struct._encode_at(value, version, flexible)

    def read_nullable_struct(r: Reader) -> Struct | None:
        if tagged:
            marker = read_uvarint(r)
            if marker <= 0:
                return None
        else:
            if r.remaining() < 1:
                raise DecodeFailure("needs a null marker, 0 bytes left")
            marker = r.read(1)[0]
            if marker >= 0x80:  # negative int8
                return None
        return struct._decode_at(r, version, flexible)

    return write_nullable_struct, read_nullable_struct


class Struct:
    """Base class of every struct and message; see the module docstring."""

    __kafka_fields__: ClassVar[tuple[FieldSpec, ...]] = ()
    __kafka_compiled__: ClassVar[dict[tuple[int, bool], _Compiled]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        specs: list[FieldSpec] = []
        for name, value in list(vars(cls).items()):
            if isinstance(value, FieldSpec):
                value.name = name
                if not value.kafka_name:
                    value.kafka_name = _kafka_name(name)
                specs.append(value)
                delattr(cls, name)
        if specs:
            cls.__kafka_fields__ = tuple(specs)
        cls.__kafka_compiled__ = {}

    def __init__(self, **values: Any) -> None:
        fields = self.__kafka_fields__
        state = self.__dict__
        for spec in fields:
            value = values.pop(spec.name, _MISSING)
            state[spec.name] = spec.default() if value is _MISSING else value
        if values:
            known = ", ".join(spec.name for spec in fields)
            raise TypeError(
                f"{type(self).__name__} has no field {', '.join(sorted(values))} (fields: {known})"
            )

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        body = ", ".join(f"{spec.name}={self.__dict__.get(spec.name)!r}" for spec in self.__kafka_fields__)
        return f"{type(self).__name__}({body})"

    def replace(self: S, **changes: Any) -> S:
        """A shallow copy with some fields changed."""
        clone = copy.copy(self)
        for name, value in changes.items():
            if not any(spec.name == name for spec in self.__kafka_fields__):
                raise TypeError(f"{type(self).__name__} has no field {name}")
            clone.__dict__[name] = value
        return clone

    # -- codec ---------------------------------------------------------------------------------

    @classmethod
    def _compiled(cls, version: int, flexible: bool) -> _Compiled:
        key = (version, flexible)
        compiled = cls.__kafka_compiled__.get(key)
        if compiled is None:
            compiled = _Compiled(cls, version, flexible)
            cls.__kafka_compiled__[key] = compiled
        return compiled

    @classmethod
    def _encode_at(cls, value: Struct, version: int, flexible: bool) -> bytes:
        compiled = cls._compiled(version, flexible)
        state = value.__dict__
        parts: list[bytes] = []
        append = parts.append
        for name, kafka_name, enc, _dec, _nullable in compiled.present:
            try:
                append(enc(state[name]))
            except DecodeFailure as exc:
                exc.path.insert(0, kafka_name)
                raise
            except Exception as exc:
                raise DecodeFailure(f"cannot encode {state[name]!r}: {exc}", [kafka_name]) from None
        for spec in compiled.absent:
            if not spec.ignorable and state[spec.name] != spec.default():
                raise DecodeFailure(
                    f"field is set but does not exist in version {version}", [spec.kafka_name]
                )
        if flexible:
            tagged_parts: list[bytes] = []
            count = 0
            for tag, spec, enc in compiled.tagged_sorted:
                current = state[spec.name]
                if current == spec.default():
                    continue
                try:
                    body = enc(current)
                except DecodeFailure as exc:
                    exc.path.insert(0, spec.kafka_name)
                    raise
                except Exception as exc:
                    raise DecodeFailure(f"cannot encode {current!r}: {exc}", [spec.kafka_name]) from None
                tagged_parts.append(write_uvarint(tag) + write_uvarint(len(body)) + body)
                count += 1
            append(write_uvarint(count))
            parts.extend(tagged_parts)
        return b"".join(parts)

    @classmethod
    def _decode_at(cls: type[S], r: Reader, version: int, flexible: bool) -> S:
        compiled = cls._compiled(version, flexible)
        obj = cls.__new__(cls)
        state = obj.__dict__
        for name, kafka_name, _enc, dec, _nullable in compiled.present:
            try:
                state[name] = dec(r)
            except DecodeFailure as exc:
                exc.path.insert(0, kafka_name)
                raise
            except Exception as exc:
                raise DecodeFailure(f"{type(exc).__name__}: {exc}", [kafka_name]) from None
        for spec in compiled.absent:
            state[spec.name] = spec.default()
        if flexible:
            for _tag, spec, _enc in compiled.tagged_sorted:
                state[spec.name] = spec.default()
            try:
                count = read_uvarint(r)
                if count > r.remaining():
                    raise DecodeFailure(f"{count} tagged fields exceed the {r.remaining()} bytes left")
            except DecodeFailure as exc:
                exc.path.insert(0, "TaggedFields")
                raise
            for _ in range(count):
                tag = -1
                try:
                    tag = read_uvarint(r)
                    raw = r.take(read_uvarint(r))
                except DecodeFailure as exc:
                    exc.path.insert(0, f"TaggedFields[tag {tag}]" if tag >= 0 else "TaggedFields")
                    raise
                known = compiled.tagged_by_tag.get(tag)
                if known is None:
                    continue  # unknown tagged fields are skipped, as Kafka does
                spec, _enc, dec = known
                sub = Reader(raw)
                try:
                    state[spec.name] = dec(sub)
                    if sub.remaining():
                        raise DecodeFailure(f"{sub.remaining()} bytes left inside the tagged field")
                except DecodeFailure as exc:
                    exc.path.insert(0, spec.kafka_name)
                    raise
                except Exception as exc:
                    raise DecodeFailure(f"{type(exc).__name__}: {exc}", [spec.kafka_name]) from None
        return obj


def format_path(path: list[str]) -> str:
    """``["Topics", "[2]", "Partitions"]`` → ``Topics[2].Partitions``."""
    out = ""
    for part in path:
        if part.startswith("[") or not out:
            out += part
        else:
            out += "." + part
    return out


class Message(Struct):
    """A request or response body of one API; class keywords give its key and versions."""

    API_KEY: ClassVar[int] = -1
    VALID_VERSIONS: ClassVar[Versions] = Versions(0, -1)
    FLEXIBLE_VERSIONS: ClassVar[Versions] = Versions(0, -1)

    def __init_subclass__(
        cls,
        api_key: int | None = None,
        valid: str | None = None,
        flexible: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if api_key is not None:
            cls.API_KEY = api_key
        if valid is not None:
            cls.VALID_VERSIONS = Versions.parse(valid)
        if flexible is not None:
            cls.FLEXIBLE_VERSIONS = Versions.parse(flexible)

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return version in cls.FLEXIBLE_VERSIONS

    def encode(self, version: int) -> bytes:
        """The body of this message at `version` (no header, no size prefix)."""
        cls = type(self)
        if version not in cls.VALID_VERSIONS:
            raise ProtocolError(
                cls.__name__, version, None, f"unsupported version (valid: {cls.VALID_VERSIONS})"
            )
        try:
            return cls._encode_at(self, version, cls.is_flexible(version))
        except DecodeFailure as exc:
            raise ProtocolError(cls.__name__, version, format_path(exc.path) or None, exc.reason) from None

    @classmethod
    def decode(
        cls: type[M],
        data: bytes | bytearray | memoryview | Reader,
        version: int,
        allow_trailing: bool = False,
    ) -> M:
        """Decode a body at `version`; any failure is a `ProtocolError` naming the field.

        Bytes after the body are an error unless `allow_trailing` (see `decode_prefix`)."""
        message, trailing = cls.decode_prefix(data, version)
        if trailing and not allow_trailing:
            raise ProtocolError(cls.__name__, version, None, f"{trailing} unexpected trailing bytes")
        return message

    @classmethod
    def decode_prefix(
        cls: type[M], data: bytes | bytearray | memoryview | Reader, version: int
    ) -> tuple[M, int]:
        """Decode a body at `version` from the start of `data`; returns it and the number of bytes
        left after it. Kafka's own parsers ignore such bytes, and some peers send them
        (librdkafka pads its Metadata v9+ request for all topics, its mock cluster pads flexible
        Metadata responses), so lenient readers use this."""
        if version not in cls.VALID_VERSIONS:
            raise ProtocolError(
                cls.__name__, version, None, f"unsupported version (valid: {cls.VALID_VERSIONS})"
            )
        reader = data if isinstance(data, Reader) else Reader(data)
        try:
            message = cls._decode_at(reader, version, cls.is_flexible(version))
        except DecodeFailure as exc:
            raise ProtocolError(cls.__name__, version, format_path(exc.path) or None, exc.reason) from None
        except Exception as exc:  # defensive: no other exception type may escape a decode
            raise ProtocolError(cls.__name__, version, None, f"{type(exc).__name__}: {exc}") from None
        return message, reader.remaining()
