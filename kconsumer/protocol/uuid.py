"""Kafka's UUID: 16 bytes on the wire, base64url (no padding) as text."""

from __future__ import annotations

import base64
from typing import Any


class Uuid:
    """A Kafka UUID (topic ids, for instance). Immutable, hashable and ordered by its bytes.

    ``str(uuid)`` is Kafka's text form: the 16 bytes in URL-safe base64 without padding
    (22 characters), as ``kafka-topics.sh`` prints topic ids.
    """

    __slots__ = ("_bytes", "_hash")

    _bytes: bytes
    _hash: int

    def __init__(self, raw: bytes) -> None:
        if len(raw) != 16:
            raise ValueError(f"a Kafka UUID is 16 bytes, got {len(raw)}")
        object.__setattr__(self, "_bytes", bytes(raw))
        object.__setattr__(self, "_hash", hash(self._bytes))

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
    def bytes(self) -> bytes:
        """The 16 raw bytes."""
        return self._bytes

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Uuid is immutable")

    def __str__(self) -> str:
        return base64.urlsafe_b64encode(self._bytes).decode("ascii").rstrip("=")

    def __repr__(self) -> str:
        return f"Uuid({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Uuid) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: Uuid) -> bool:
        return self._bytes < other._bytes

    def __le__(self, other: Uuid) -> bool:
        return self._bytes <= other._bytes

    def __gt__(self, other: Uuid) -> bool:
        return self._bytes > other._bytes

    def __ge__(self, other: Uuid) -> bool:
        return self._bytes >= other._bytes

    def __bool__(self) -> bool:
        return self._bytes != ZERO_BYTES

    def __reduce__(self) -> tuple[Any, ...]:
        return (Uuid, (self._bytes,))


ZERO_BYTES = bytes(16)
ZERO_UUID = Uuid(ZERO_BYTES)
"""Kafka's ``Uuid.ZERO_UUID``: the default value of uuid fields, "no id"."""
