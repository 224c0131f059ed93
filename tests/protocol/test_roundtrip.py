"""Every message, every version: encode → decode round-trips; random and truncated bytes only
ever raise ProtocolError."""

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
def test_encode_decode_round_trips(cls: type[Message], version: int, data: st.DataObject) -> None:
    message = data.draw(struct_strategy(cls, version))
    encoded = message.encode(version)
    assert cls.decode(encoded, version) == message


@pytest.mark.parametrize(("cls", "version"), CASES)
@FAST
@given(data=st.data())
def test_truncated_bytes_raise_protocol_error(cls: type[Message], version: int, data: st.DataObject) -> None:
    message = data.draw(struct_strategy(cls, version))
    encoded = message.encode(version)
    cut = data.draw(st.integers(0, max(0, len(encoded) - 1)))
    if cut == len(encoded):
        return
    try:
        cls.decode(encoded[:cut], version)
    except ProtocolError as exc:
        assert exc.api == cls.__name__ and exc.version == version
    # Some prefixes are themselves valid messages (for example an empty trailing array); that is fine.


@pytest.mark.parametrize(("cls", "version"), CASES)
@FAST
@given(garbage=st.binary(max_size=200))
def test_random_bytes_raise_only_protocol_error(cls: type[Message], version: int, garbage: bytes) -> None:
    with contextlib.suppress(ProtocolError):
        cls.decode(garbage, version)


@pytest.mark.parametrize(("cls", "version"), CASES)
@FAST
@given(data=st.data())
def test_mutated_bytes_raise_only_protocol_error(
    cls: type[Message], version: int, data: st.DataObject
) -> None:
    encoded = bytearray(data.draw(struct_strategy(cls, version)).encode(version))
    if not encoded:
        return
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(encoded) - 1))
        encoded[position] = data.draw(st.integers(0, 255))
    with contextlib.suppress(ProtocolError):
        cls.decode(bytes(encoded), version)
