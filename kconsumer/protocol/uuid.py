"""Kafka's UUID: 16 bytes on the wire, base64url (no padding) as text."""

from __future__ import annotations

import base64
import builtins


class Uuid(bytes):
    """A Kafka UUID (topic ids, for instance): its 16 bytes, immutable, ordered by those bytes.

    It is a `bytes` subclass so that hashing, equality and ordering run in C (topic ids are dict
    keys on every hot path of the coordinator and its assignors) and the hash is cached.
    ``str(uuid)`` is Kafka's text form: URL-safe base64 without padding (22 characters), as
    ``kafka-topics.sh`` prints topic ids. The zero UUID (Kafka's "no id") is falsy.
    """

    __slots__ = ()

    def __new__(cls, raw: bytes | bytearray | memoryview) -> Uuid:
        if len(raw) != 16:
            raise ValueError(f"a Kafka UUID is 16 bytes, got {len(raw)}")
        return super().__new__(cls, raw)

    @classmethod
    def from_string(cls, text: str) -> Uuid:
        """Parse Kafka's base64url text form."""
        if len(text) != 22:
            raise ValueError(f"not a Kafka UUID: {text!r}")
        try:
            raw = base64.urlsafe_b64decode(text + "==")
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not a Kafka UUID: {text!r}") from exc
        return cls(raw)

    @classmethod
    def from_int(cls, value: int) -> Uuid:
        """A UUID whose 128 bits are `value` (deterministic ids for tests and simulations)."""
        return cls(value.to_bytes(16, "big"))

    @property
    def bytes(self) -> builtins.bytes:
        """The 16 raw bytes, as a plain `bytes` object."""
        return builtins.bytes(self)

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self).decode("ascii").rstrip("=")

    def __repr__(self) -> str:
        return f"Uuid({str(self)!r})"

    def __bool__(self) -> bool:
        return self != ZERO_BYTES

    def __reduce__(self) -> tuple[type[Uuid], tuple[builtins.bytes]]:
        return (Uuid, (builtins.bytes(self),))


ZERO_BYTES = bytes(16)
ZERO_UUID = Uuid(ZERO_BYTES)
"""Kafka's ``Uuid.ZERO_UUID``: the default value of uuid fields, "no id"."""
