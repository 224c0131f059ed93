"""Hypothesis strategies that generate valid instances of any message at any version.

Used by the round-trip and fuzz tests; kept in the package so the simulation and other test
suites can reuse it. Importing it requires hypothesis (the ``test`` extra).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from .schema import FieldSpec, Struct, StructType
from .types import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    RECORDS,
    STRING,
    UINT32,
    UUID,
    Array,
    KafkaType,
)
from .uuid import Uuid

_INTS = {
    INT8: st.integers(-(2**7), 2**7 - 1),
    INT16: st.integers(-(2**15), 2**15 - 1),
    INT32: st.integers(-(2**31), 2**31 - 1),
    INT64: st.integers(-(2**63), 2**63 - 1),
    UINT32: st.integers(0, 2**32 - 1),
}


def _type_strategy(type_: KafkaType, version: int, depth: int) -> st.SearchStrategy[Any]:
    if type_ in _INTS:
        return _INTS[type_]
    if type_ is BOOL:
        return st.booleans()
    if type_ is FLOAT64:
        return st.floats(allow_nan=False)
    if type_ is UUID:
        return st.binary(min_size=16, max_size=16).map(Uuid)
    if type_ is STRING:
        return st.text(max_size=12)
    if type_ is BYTES:
        return st.binary(max_size=24)
    if type_ is RECORDS:
        return st.binary(max_size=48)
    if isinstance(type_, StructType):
        return struct_strategy(type_.struct, version, depth + 1)
    if isinstance(type_, Array):
        return st.lists(_type_strategy(type_.element, version, depth + 1), max_size=3 if depth < 2 else 1)
    raise TypeError(f"no strategy for {type_!r}")


def _field_strategy(spec: FieldSpec, version: int, depth: int) -> st.SearchStrategy[Any]:
    base = _type_strategy(spec.type, version, depth)
    if version in spec.nullable:
        return st.one_of(st.none(), base)
    return base


def struct_strategy(struct: type[Struct], version: int, depth: int = 0) -> st.SearchStrategy[Any]:
    """Instances of `struct` whose fields are set only where they exist at `version`."""
    present = {
        spec.name: _field_strategy(spec, version, depth)
        for spec in struct.__kafka_fields__
        if version in spec.versions
    }
    return st.fixed_dictionaries(present).map(lambda values: struct(**values))
