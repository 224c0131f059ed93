"""Every message, every version: encode → decode round-trips; random, truncated and mutated bytes
only ever raise ProtocolError.

Generating messages is the expensive part, so one drawn message serves the round trip, a
truncation and a mutation (keeps the whole directory fast with ~220 message/version cases).
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kconsumer.errors import ProtocolError
from kconsumer.protocol.api import API_SPECS
from kconsumer.protocol.schema import Message
from kconsumer.protocol.strategies import struct_strategy

CASES = [
    pytest.param(cls, version, id=f"{cls.__name__}-v{version}")
    for spec in API_SPECS.values()
    for cls in (spec.request, spec.response)
    for version in range(spec.versions.lo, (spec.versions.hi or spec.versions.lo) + 1)
]

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(("cls", "version"), CASES)
@FAST
@given(data=st.data())
def test_encode_decode_round_trips_and_corruption_raises_protocol_error(
    cls: type[Message], version: int, data: st.DataObject
) -> None:
    message = data.draw(struct_strategy(cls, version))
    encoded = message.encode(version)
    assert cls.decode(encoded, version) == message

    # Truncated: a ProtocolError naming this message and version (some prefixes are themselves
    # valid messages, for example when a trailing array is empty; that is fine).
    cut = data.draw(st.integers(0, max(0, len(encoded) - 1)))
    if cut < len(encoded):
        try:
            cls.decode(encoded[:cut], version)
        except ProtocolError as exc:
            assert exc.api == cls.__name__ and exc.version == version

    # Mutated: any outcome but an exception other than ProtocolError.
    if encoded:
        mutated = bytearray(encoded)
        for _ in range(data.draw(st.integers(1, 4))):
            position = data.draw(st.integers(0, len(mutated) - 1))
            mutated[position] = data.draw(st.integers(0, 255))
        with contextlib.suppress(ProtocolError):
            cls.decode(bytes(mutated), version)


@pytest.mark.parametrize(("cls", "version"), CASES)
@FAST
@given(garbage=st.binary(max_size=200))
def test_random_bytes_raise_only_protocol_error(cls: type[Message], version: int, garbage: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        cls.decode(garbage, version)
