"""The classic leader's handling of a strategy's result (`kconsumer.assignment.classic_leader`):
checked with the rules every assignor obeys, cooperative hand-overs held back, user data carried."""

from __future__ import annotations

import pytest

from kconsumer import AssignorFailedError, GroupAssignment, MemberAssignment
from kconsumer.assignment.classic_leader import (
    assigned_partitions,
    classic_spec,
    decode_assignment,
    encode_result,
)
from kconsumer.protocol.consumer_protocol import (
    ConsumerSubscription,
    ConsumerTopicPartitions,
    encode_consumer_protocol,
)


def _member(member_id: str, owned: dict[str, list[int]], data: bytes = b"") -> tuple[str, None, bytes]:
    subscription = ConsumerSubscription(
        topics=["t"],
        user_data=data or None,
        owned_partitions=[ConsumerTopicPartitions(topic=t, partitions=p) for t, p in owned.items()],
        generation_id=3,
        rack_id=None,
    )
    return member_id, None, encode_consumer_protocol(subscription)


SPEC = classic_spec([_member("a", {"t": [0, 1]}, b"A"), _member("b", {})], {"t": 4}, "mine")


def test_the_spec_carries_user_data_owned_partitions_and_generations() -> None:
    a = SPEC.members["a"]
    assert (a.metadata.version, a.metadata.data, a.member_epoch) == (-1, b"A", 3)
    assert dict(a.target_partitions) == {"t": (0, 1)} and SPEC.assignor_name == "mine"
    assert SPEC.topics["t"].num_partitions == 4


def test_an_eager_result_is_encoded_with_each_members_bytes() -> None:
    result = GroupAssignment(
        members={"a": MemberAssignment({"t": [0, 1]}, data=b"x"), "b": MemberAssignment({"t": [2, 3]})}
    )
    out = encode_result(SPEC, result, cooperative=False)
    assert decode_assignment(out["a"]) == ({"t": [0, 1]}, b"x")
    assert decode_assignment(out["b"]) == ({"t": [2, 3]}, b"")


def test_a_cooperative_result_holds_back_what_another_member_still_owns() -> None:
    moved = GroupAssignment(
        members={"a": MemberAssignment({"t": [1, 2]}), "b": MemberAssignment({"t": [0, 3]})}
    )
    out = encode_result(SPEC, moved, cooperative=True)
    assert assigned_partitions(out["a"]) == {"t": [1, 2]}
    assert assigned_partitions(out["b"]) == {"t": [3]}  # 0 is still a's: handed over next time
    # Eagerly the same result stands as it is (every member gave everything up before joining).
    assert assigned_partitions(encode_result(SPEC, moved, cooperative=False)["b"]) == {"t": [0, 3]}


@pytest.mark.parametrize(
    ("members", "cooperative", "rule"),
    [
        ({"a": {"t": [0, 1, 2]}, "b": {"t": [2, 3]}}, False, "each partition assigned exactly once"),
        ({"a": {"t": [0, 1]}, "b": {"t": [3]}}, False, "every partition of every subscribed topic"),
        ({"a": {"t": [1]}, "b": {"t": [2]}}, True, "every partition of every subscribed topic"),
        ({"a": {"t": [0, 1, 4]}, "b": {"t": [2, 3]}}, False, "only existing partitions"),
        ({"a": {"t": [0, 1], "u": [0]}, "b": {"t": [2, 3]}}, False, "only subscribed topics"),
        ({"a": {"t": [0, 1]}, "z": {"t": [2, 3]}}, False, "only members of the group"),
    ],
)
def test_invalid_results_name_the_rule(
    members: dict[str, dict[str, list[int]]], cooperative: bool, rule: str
) -> None:
    result = GroupAssignment(members={m: MemberAssignment(p) for m, p in members.items()})
    with pytest.raises(AssignorFailedError, match=rule):
        encode_result(SPEC, result, cooperative=cooperative)


def test_a_result_that_is_not_a_group_assignment_is_refused() -> None:
    with pytest.raises(AssignorFailedError, match="must return a GroupAssignment, got dict"):
        encode_result(SPEC, {}, cooperative=False)
