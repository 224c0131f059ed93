"""The `range` server-side assignor: concrete cases (facts §6.2)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kconsumer.assignment.algorithms import RangeServerAssignor
from kconsumer.assignment.interface import (
    GroupSpec,
    MemberSpec,
    PartitionAssignorError,
    PartitionsByTopicId,
    SubscriptionType,
    TopicMetadata,
)
from kconsumer.assignment.validation import validate_result
from kconsumer.protocol.uuid import Uuid

HOMO = SubscriptionType.HOMOGENEOUS
HETERO = SubscriptionType.HETEROGENEOUS
T1, T2, T3 = Uuid.from_int(1), Uuid.from_int(2), Uuid.from_int(3)
BOTH = frozenset({T1, T2})


def topics(**counts: int) -> dict[Uuid, TopicMetadata]:
    ids = {"t1": T1, "t2": T2, "t3": T3}
    return {ids[name]: TopicMetadata(ids[name], name, count) for name, count in counts.items()}


def member(
    member_id: str,
    subscribed: frozenset[Uuid],
    instance_id: str | None = None,
    assignment: Mapping[Uuid, set[int]] | None = None,
) -> MemberSpec:
    previous = {t: frozenset(ps) for t, ps in (assignment or {}).items()}
    return MemberSpec(member_id, instance_id, None, subscribed, previous)


Plain = dict[str, dict[Uuid, set[int]]]


def assign(
    members: list[MemberSpec], meta: dict[Uuid, TopicMetadata], kind: SubscriptionType = HOMO
) -> Plain:
    spec = GroupSpec({m.member_id: m for m in members}, meta, kind)
    result = RangeServerAssignor().assign(spec)
    validate_result(spec, result)
    return plain(result)


def plain(result: Mapping[str, PartitionsByTopicId]) -> Plain:
    return {m: {t: set(ps) for t, ps in a.items()} for m, a in result.items()}


def test_name() -> None:
    assert RangeServerAssignor().name == "range"


def test_no_members() -> None:
    assert RangeServerAssignor().assign(GroupSpec({}, topics(t1=3), HOMO)) == {}


def test_homogeneous_ranges_are_contiguous_and_co_partitioned() -> None:
    result = assign([member("A", BOTH), member("B", BOTH)], topics(t1=3, t2=3))
    assert result == {"A": {T1: {0, 1}, T2: {0, 1}}, "B": {T1: {2}, T2: {2}}}


def test_first_members_get_the_extra_partitions() -> None:
    result = assign([member(m, frozenset({T1})) for m in "ABC"], topics(t1=8))
    assert result == {"A": {T1: {0, 1, 2}}, "B": {T1: {3, 4, 5}}, "C": {T1: {6, 7}}}


def test_static_members_first_by_instance_id_then_dynamic_by_member_id() -> None:
    one = frozenset({T1})
    result = assign(
        [member("m1", one), member("m2", one, "zeta"), member("m0", one), member("m3", one, "alpha")],
        topics(t1=7),
    )
    assert result == {
        "m3": {T1: {0, 1}},  # static, instance "alpha"
        "m2": {T1: {2, 3}},  # static, instance "zeta"
        "m0": {T1: {4, 5}},  # dynamic, by member id
        "m1": {T1: {6}},
    }


def test_heterogeneous_uses_each_topic_s_subscribers() -> None:
    result = assign(
        [member("A", BOTH), member("B", frozenset({T2})), member("C", frozenset({T1}))],
        topics(t1=4, t2=3),
        HETERO,
    )
    assert result == {"A": {T1: {0, 1}, T2: {0, 1}}, "B": {T2: {2}}, "C": {T1: {2, 3}}}


def test_more_members_than_partitions_leaves_the_last_ones_empty() -> None:
    result = assign([member(m, frozenset({T1})) for m in "ABC"], topics(t1=2))
    assert result == {"A": {T1: {0}}, "B": {T1: {1}}, "C": {}}


def test_not_sticky_the_previous_assignment_is_ignored() -> None:
    one = frozenset({T1})
    fresh = assign([member("A", one), member("B", one)], topics(t1=4))
    previous = assign(
        [member("A", one, assignment={T1: {2, 3}}), member("B", one, assignment={T1: {0, 1}})], topics(t1=4)
    )
    assert fresh == previous == {"A": {T1: {0, 1}}, "B": {T1: {2, 3}}}


def test_topics_without_partitions_and_empty_subscriptions() -> None:
    result = assign([member("A", BOTH), member("B", frozenset())], topics(t1=0, t2=1), HETERO)
    assert result == {"A": {T2: {0}}, "B": {}}


@pytest.mark.parametrize("kind", [HOMO, HETERO])
def test_missing_topic_raises(kind: SubscriptionType) -> None:
    spec = GroupSpec({"A": member("A", frozenset({T1, T3}))}, topics(t1=1), kind)
    with pytest.raises(PartitionAssignorError, match=str(T3)):
        RangeServerAssignor().assign(spec)


def test_equal_ranges_are_shared_frozensets() -> None:
    spec = GroupSpec({m: member(m, BOTH) for m in "AB"}, topics(t1=4, t2=4), HOMO)
    result = RangeServerAssignor().assign(spec)
    assert result["A"][T1] is result["A"][T2]
