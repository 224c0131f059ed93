"""The assignor registry (``group.consumer.assignors``) and checking a (custom) assignor's result."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kconsumer.assignment.algorithms import RangeServerAssignor, UniformServerAssignor
from kconsumer.assignment.interface import (
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    PartitionsByTopicId,
    ServerAssignor,
    SubscriptionType,
    TopicMetadata,
)
from kconsumer.assignment.validation import validate_result
from kconsumer.broker.coordinator.assignors import (
    ASSIGNORS,
    DEFAULT_ASSIGNORS,
    UnknownAssignorError,
    assignor_by_name,
    load_assignor,
    register_assignor,
    resolve_assignors,
    unregister_assignor,
)
from kconsumer.protocol.uuid import Uuid

T1 = Uuid.from_int(1)


class EverythingToTheFirst:
    """A custom assignor: every partition to the first member (by id)."""

    name = "first"

    def assign(self, spec: GroupSpec) -> dict[str, PartitionsByTopicId]:
        result: dict[str, PartitionsByTopicId] = {m: {} for m in spec.members}
        if spec.members:
            first = min(spec.members)
            result[first] = {t: frozenset(range(spec.topics[t].num_partitions)) for t in spec.topics}
        return result


@pytest.fixture
def custom() -> Iterator[ServerAssignor]:
    assignor = EverythingToTheFirst()
    yield register_assignor(assignor)
    unregister_assignor("first")


def test_defaults_follow_kafka() -> None:
    assert DEFAULT_ASSIGNORS == ("uniform", "range")
    assert isinstance(assignor_by_name("uniform"), UniformServerAssignor)
    assert isinstance(assignor_by_name("range"), RangeServerAssignor)
    assert [a.name for a in resolve_assignors(DEFAULT_ASSIGNORS)] == ["uniform", "range"]
    assert {"uniform", "range"} <= set(ASSIGNORS)


def test_unknown_name() -> None:
    with pytest.raises(UnknownAssignorError, match="sticky"):
        assignor_by_name("sticky")


def test_registered_assignor_is_found_and_resolved(custom: ServerAssignor) -> None:
    assert assignor_by_name("first") is custom
    assert ASSIGNORS["first"] is custom
    assert resolve_assignors(["first", "uniform"])[0] is custom


def test_unregister_removes_it(custom: ServerAssignor) -> None:
    unregister_assignor("first")
    assert "first" not in ASSIGNORS
    with pytest.raises(UnknownAssignorError):
        assignor_by_name("first")


def test_registering_a_taken_name_needs_replace(custom: ServerAssignor) -> None:
    other = EverythingToTheFirst()
    with pytest.raises(ValueError, match="already registered"):
        register_assignor(other)
    assert register_assignor(other, replace=True) is other
    assert assignor_by_name("first") is other


def test_built_ins_cannot_be_replaced_or_removed() -> None:
    class Impostor(EverythingToTheFirst):
        name = "uniform"

    with pytest.raises(ValueError, match="built-in"):
        register_assignor(Impostor(), replace=True)
    with pytest.raises(ValueError, match="built-in"):
        unregister_assignor("range")
    assert isinstance(assignor_by_name("uniform"), UniformServerAssignor)


def test_register_rejects_objects_that_are_not_assignors() -> None:
    with pytest.raises(TypeError):
        register_assignor(object())  # type: ignore[arg-type]


def test_module_class_path_is_loaded_once() -> None:
    path = "kconsumer.assignment.algorithms.range_assignor:RangeServerAssignor"
    loaded = load_assignor(path)
    assert isinstance(loaded, RangeServerAssignor)
    assert loaded is not assignor_by_name("range")
    assert assignor_by_name(path) is loaded
    assert resolve_assignors(["uniform", path])[1] is loaded


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("no_such_module_here:Thing", UnknownAssignorError),
        ("kconsumer.broker.coordinator.assignors:NoSuchClass", UnknownAssignorError),
        ("just-a-name:", UnknownAssignorError),
        ("json:dumps", TypeError),  # importable, but not an assignor
    ],
)
def test_bad_module_class_paths(path: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        assignor_by_name(path)


def test_resolve_accepts_instances_and_rejects_duplicates_and_empty_lists() -> None:
    instance = EverythingToTheFirst()
    assert resolve_assignors([instance, "range"])[0] is instance
    with pytest.raises(ValueError, match="twice"):
        resolve_assignors(["uniform", "range", "uniform"])
    with pytest.raises(ValueError, match="at least one"):
        resolve_assignors([])


class TestValidateAssignment:
    SPEC = GroupSpec(
        {
            "A": MemberSpec("A", None, None, frozenset({T1}), {}),
            "B": MemberSpec("B", None, None, frozenset(), {}),
        },
        {T1: TopicMetadata(T1, "t1", 2)},
        SubscriptionType.HETEROGENEOUS,
    )

    def test_accepts_a_valid_result(self) -> None:
        validate_result(self.SPEC, {"A": {T1: frozenset({0, 1})}, "B": {}})

    @pytest.mark.parametrize(
        ("result", "message"),
        [
            ({"A": {T1: frozenset({0, 1})}}, "missing"),
            ({"A": {T1: frozenset({0})}, "B": {}}, "not assigned"),
            ({"A": {T1: frozenset({0, 1})}, "B": {T1: frozenset({1})}}, "does not subscribe"),
            ({"A": {T1: frozenset({0, 1, 2})}, "B": {}}, "rule: only existing partitions"),
            ({"A": {T1: frozenset({0, 1})}, "B": {}, "C": {}}, "rule: only members of the group"),
            ({"A": {T1: {0, 1}}, "B": {}}, "frozenset"),
        ],
    )
    def test_rejects(self, result: dict[str, PartitionsByTopicId], message: str) -> None:
        with pytest.raises(PartitionAssignorError, match=message):
            validate_result(self.SPEC, result)

    def test_rejects_a_partition_assigned_twice(self) -> None:
        both = GroupSpec(
            {m: MemberSpec(m, None, None, frozenset({T1}), {}) for m in "AB"},
            {T1: TopicMetadata(T1, "t1", 2)},
            SubscriptionType.HOMOGENEOUS,
        )
        with pytest.raises(PartitionAssignorError, match="rule: each partition assigned exactly once"):
            validate_result(both, {"A": {T1: frozenset({0, 1})}, "B": {T1: frozenset({1})}})

    def test_a_custom_assignor_s_result_can_be_checked(self, custom: ServerAssignor) -> None:
        validate_result(self.SPEC, custom.assign(self.SPEC))
