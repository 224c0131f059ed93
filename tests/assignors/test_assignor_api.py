"""The public assignor API: value types (validation, normalization), the `PartitionAssignor` ABC
and its defaults, and how configuration takes assignors (``group.local.assignors``)."""

from __future__ import annotations

import doctest
from typing import Any

import pytest
from confluent_kafka import TopicPartition

import kconsumer
import kconsumer.assignment.announcements
import kconsumer.assignment.assignor
import kconsumer.assignment.builtin
import kconsumer.assignment.loading
import kconsumer.assignment.versions
import kconsumer.assignors
from kconsumer import (
    AssignmentMemberSpec,
    AssignmentSpec,
    AssignmentTopicMetadata,
    AssignorError,
    AssignorMetadata,
    ConfigError,
    Consumer,
    GroupAssignment,
    MemberAssignment,
    MemberMetadata,
    PartitionAssignor,
)
from kconsumer.assignment.announcements import AnnouncedAssignor
from kconsumer.assignment.assignor import assignor_metadata, partitions_by_topic
from kconsumer.assignors import RangeAssignor, UniformAssignor
from kconsumer.client.config import ConsumerConfig, LocalAssignor


@pytest.mark.parametrize(
    "module",
    [
        kconsumer.assignment.assignor,
        kconsumer.assignment.builtin,
        kconsumer.assignment.loading,
        kconsumer.assignment.versions,
    ],
)
def test_docstring_examples(module: Any) -> None:
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


def test_exported_from_the_package() -> None:
    for name in (
        "PartitionAssignor",
        "AssignmentSpec",
        "GroupAssignment",
        "MemberAssignment",
        "AssignorMetadata",
    ):
        assert name in kconsumer.__all__
        assert getattr(kconsumer, name) is getattr(kconsumer.assignment.assignor, name)
    for name in ("RangeAssignor", "UniformAssignor"):
        assert name in kconsumer.__all__ and getattr(kconsumer, name) is getattr(kconsumer.assignors, name)


# -- partitions ----------------------------------------------------------------------------------------


def test_partitions_by_topic_accepts_mappings_pairs_and_topic_partitions() -> None:
    expected = {"a": (0, 1, 2), "b": (5,)}
    assert partitions_by_topic({"b": [5, 5], "a": range(3), "c": []}) == expected
    assert partitions_by_topic([("b", 5), ("a", 2), ("a", 0), ("a", 1)]) == expected
    assert (
        partitions_by_topic([TopicPartition("a", p) for p in (2, 1, 0)] + [TopicPartition("b", 5)])
        == expected
    )
    assert list(partitions_by_topic({"z": [1], "a": [1]})) == ["a", "z"]  # sorted by name


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ({"a": [-1]}, ValueError),
        ({"a": [2**31]}, ValueError),
        ({"a": ["1"]}, TypeError),
        ({"a": [True]}, TypeError),
        ({"a": "01"}, TypeError),
        ({"a": 3}, TypeError),
        ({"": [0]}, TypeError),
        ([("a", 1, 2)], TypeError),
        ([object()], TypeError),
    ],
)
def test_partitions_by_topic_rejects(value: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        partitions_by_topic(value)


# -- value types -----------------------------------------------------------------------------------------


def test_assignor_metadata() -> None:
    meta = AssignorMetadata(1, 2, bytearray(b"x"))
    assert (meta.reason, meta.version, meta.data) == (1, 2, b"x") and isinstance(meta.data, bytes)
    assert AssignorMetadata() == AssignorMetadata(0, 0, b"")
    hash(meta)  # frozen and hashable
    with pytest.raises(AttributeError):
        meta.version = 3  # type: ignore[misc]
    for bad in ({"reason": 128}, {"reason": -129}, {"version": 2**15}, {"version": 1.0}):
        with pytest.raises((ValueError, TypeError)):
            AssignorMetadata(**bad)
    with pytest.raises(TypeError, match="bytes"):
        AssignorMetadata(data="text")  # type: ignore[arg-type]


def test_member_assignment() -> None:
    a = MemberAssignment({"t": [3, 1, 3]}, b"note")
    assert (a.partitions, a.data, a.version, a.count) == ({"t": (1, 3)}, b"note", None, 2)
    assert a == MemberAssignment([("t", 1), ("t", 3)], b"note")
    assert a != MemberAssignment({"t": [1, 3]}, b"note", 0)
    assert MemberAssignment().partitions == {} and MemberAssignment().count == 0
    with pytest.raises(ValueError):
        MemberAssignment({"t": [0]}, version=-(2**15) - 1)
    with pytest.raises(TypeError):
        MemberAssignment({"t": [0]}, "note")  # type: ignore[arg-type]


def test_group_assignment() -> None:
    assignment = GroupAssignment(members={"m": MemberAssignment({"t": [0]})})
    assert assignment.error == AssignorError.NONE == 0
    assert GroupAssignment(AssignorError.INCONSISTENT_TOPOLOGY).error == 3
    with pytest.raises(ValueError):
        GroupAssignment(200)
    with pytest.raises(TypeError, match="MemberAssignment"):
        GroupAssignment(members={"m": {"t": [0]}})  # type: ignore[dict-item]


def test_assignment_spec_subscribers() -> None:
    def member(member_id: str, *topics: str) -> AssignmentMemberSpec:
        return AssignmentMemberSpec(member_id, None, None, frozenset(topics), 0, MemberMetadata(0))

    spec = AssignmentSpec(
        {"b": member("b", "x", "y"), "a": member("a", "x"), "c": member("c", "y")},
        {"x": AssignmentTopicMetadata("x", 1), "y": AssignmentTopicMetadata("y", 2)},
    )
    assert (spec.subscribers("x"), spec.subscribers("y"), spec.subscribers("z")) == (
        ["a", "b"],
        ["b", "c"],
        [],
    )


# -- the ABC -----------------------------------------------------------------------------------------------


class Minimal(PartitionAssignor):
    name = "minimal"
    maximum_version = 3

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        return GroupAssignment()


def test_partition_assignor_defaults() -> None:
    with pytest.raises(TypeError):
        PartitionAssignor()  # type: ignore[abstract]
    assignor = Minimal()
    assert (assignor.minimum_version, assignor.maximum_version) == (0, 3)
    assert assignor.metadata() == AssignorMetadata(version=3)
    assert assignor.on_assignment(0, MemberAssignment(), None) is None  # type: ignore[arg-type]
    assert repr(assignor) == "Minimal(name='minimal')"
    assert isinstance(assignor, LocalAssignor)
    assert isinstance(RangeAssignor(), LocalAssignor) and isinstance(UniformAssignor(), LocalAssignor)


def test_assignor_metadata_is_checked_against_the_range() -> None:
    class Versions(Minimal):
        def __init__(self, meta: Any) -> None:
            self.meta = meta

        def metadata(self) -> Any:
            return self.meta

    assert assignor_metadata(Versions(AssignorMetadata(version=2))).version == 2
    with pytest.raises(ValueError, match=r"outside the assignor's range \[0, 3\]"):
        assignor_metadata(Versions(AssignorMetadata(version=4)))
    with pytest.raises(TypeError, match="AssignorMetadata"):
        assignor_metadata(Versions((1, b"")))

    class Bare:
        name, minimum_version, maximum_version = "bare", 0, 2

    assert assignor_metadata(Bare()) == AssignorMetadata(version=2)


# -- configuration -------------------------------------------------------------------------------------------


class Capacity(Minimal):
    name = "capacity"
    minimum_version = 1

    def metadata(self) -> AssignorMetadata:
        return AssignorMetadata(reason=0, version=2, data=b"cap=3")


def test_member_config_takes_the_initial_metadata_from_the_assignor() -> None:
    config = ConsumerConfig.from_dict(
        {"bootstrap.servers": "h:1", "group.id": "g", "group.local.assignors": [Capacity(), RangeAssignor()]}
    )
    assert config.member_config().client_assignors == (
        AnnouncedAssignor("capacity", 1, 3, 2, b"cap=3"),
        AnnouncedAssignor("range", 0, 0, 0, b""),
    )


def test_builtins_by_import_string() -> None:
    config = ConsumerConfig.from_dict(
        {"bootstrap.servers": "h:1", "group.local.assignors": "kconsumer.assignors:UniformAssignor"}
    )
    (assignor,) = config.group_local_assignors
    assert isinstance(assignor, UniformAssignor) and assignor.name == "uniform"


def test_invalid_metadata_is_a_config_error() -> None:
    class Broken(Minimal):
        def metadata(self) -> AssignorMetadata:
            return AssignorMetadata(version=9)

    with pytest.raises(ConfigError, match=r"assignor 'minimal': metadata\(\): metadata version 9") as info:
        ConsumerConfig.from_dict({"bootstrap.servers": "h:1", "group.local.assignors": [Broken()]})
    assert info.value.key == "group.local.assignors"


def test_the_consumer_needs_assign() -> None:
    class NoAssign:
        name, minimum_version, maximum_version = "no-assign", 0, 0

    with pytest.raises(ConfigError, match=r"no assign\(spec\) method") as info:
        Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "group.local.assignors": [NoAssign()]})
    assert info.value.key == "group.local.assignors"


def test_assignor_methods_need_local_assignors() -> None:
    consumer = Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "log_level": 3})
    try:
        with pytest.raises(RuntimeError, match=r"group\.local\.assignors"):
            consumer.request_assignment()
        with pytest.raises(RuntimeError, match=r"group\.local\.assignors"):
            consumer.update_assignor_metadata()
    finally:
        consumer.close(timeout=1)
