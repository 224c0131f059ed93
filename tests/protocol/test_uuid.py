"""The Kafka UUID type: text form, ordering, hashing, falsiness of the zero UUID."""

from __future__ import annotations

import pickle

import pytest

from kconsumer.protocol.uuid import ZERO_UUID, Uuid


def test_text_form_round_trips_and_matches_kafka() -> None:
    uuid = Uuid(bytes(range(16)))
    assert str(uuid) == "AAECAwQFBgcICQoLDA0ODw" and len(str(uuid)) == 22
    assert Uuid.from_string(str(uuid)) == uuid
    assert repr(uuid) == "Uuid('AAECAwQFBgcICQoLDA0ODw')"


def test_ordering_hashing_and_equality_follow_the_bytes() -> None:
    low, high = Uuid.from_int(1), Uuid.from_int(2)
    assert low < high and sorted([high, low]) == [low, high]
    assert {low: "a"}[Uuid.from_int(1)] == "a"
    assert low.bytes == (1).to_bytes(16, "big") and type(low.bytes) is bytes


def test_zero_uuid_is_falsy_and_others_are_not() -> None:
    assert not ZERO_UUID and bool(Uuid.from_int(1))


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError):
        Uuid(b"short")
    with pytest.raises(ValueError):
        Uuid.from_string("not-a-uuid")


def test_pickles_as_a_uuid() -> None:
    uuid = Uuid.from_int(42)
    copy = pickle.loads(pickle.dumps(uuid))
    assert copy == uuid and isinstance(copy, Uuid) and str(copy) == str(uuid)
