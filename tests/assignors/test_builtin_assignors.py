"""The built-in client-side assignors: ``range`` and ``uniform`` give exactly what the server-side
algorithms of the same names give (they run them through an adapter), by topic name, and their
results are valid assignments of any group."""

from __future__ import annotations

from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from kconsumer import (
    AssignmentMemberSpec,
    AssignmentSpec,
    AssignmentTopicMetadata,
    GroupAssignment,
    MemberMetadata,
)
from kconsumer.assignment.algorithms import RangeServerAssignor as ServerRange
from kconsumer.assignment.algorithms import UniformServerAssignor as ServerUniform
from kconsumer.assignment.interface import SubscriptionType
from kconsumer.assignors import RangeAssignor, ServerAlgorithmAssignor, UniformAssignor, to_group_spec


def member(
    member_id: str,
    *topics: str,
    target: Mapping[str, tuple[int, ...]] | None = None,
    instance: str | None = None,
) -> AssignmentMemberSpec:
    return AssignmentMemberSpec(
        member_id, instance, None, frozenset(topics), 0, MemberMetadata(0), dict(target or {})
    )


def spec(members: list[AssignmentMemberSpec], **topics: int) -> AssignmentSpec:
    return AssignmentSpec(
        {m.member_id: m for m in members}, {t: AssignmentTopicMetadata(t, n) for t, n in topics.items()}
    )


def by_member(result: GroupAssignment) -> dict[str, dict[str, tuple[int, ...]]]:
    return {m: dict(a.partitions) for m, a in result.members.items()}


def check_valid(s: AssignmentSpec, result: GroupAssignment) -> None:
    """The coordinator's rules: every partition once, only to subscribed members of the spec."""
    seen: dict[tuple[str, int], str] = {}
    assert set(result.members) <= set(s.members)
    for member_id, assignment in result.members.items():
        for topic, partitions in assignment.partitions.items():
            assert topic in s.members[member_id].subscribed_topics
            for p in partitions:
                assert 0 <= p < s.topics[topic].num_partitions
                assert (topic, p) not in seen, f"{topic}-{p} twice"
                seen[topic, p] = member_id
    expected = {
        (t, p) for t, meta in s.topics.items() if s.subscribers(t) for p in range(meta.num_partitions)
    }
    assert set(seen) == expected


def test_names() -> None:
    assert (RangeAssignor().name, UniformAssignor().name) == ("range", "uniform")
    assert RangeAssignor().metadata().version == 0


def test_range_co_partitions_by_name() -> None:
    s = spec([member("b", "x", "y"), member("a", "x", "y"), member("c", "x")], x=7, y=4)
    result = RangeAssignor().assign(s)
    check_valid(s, result)
    assert by_member(result) == {
        "a": {"x": (0, 1, 2), "y": (0, 1)},
        "b": {"x": (3, 4), "y": (2, 3)},
        "c": {"x": (5, 6)},
    }


def test_range_puts_static_members_first() -> None:
    s = spec([member("a", "t"), member("z", "t", instance="i-1")], t=4)
    assert by_member(RangeAssignor().assign(s)) == {"z": {"t": (0, 1)}, "a": {"t": (2, 3)}}


def test_uniform_is_balanced_then_sticky() -> None:
    first = spec([member("a", "t"), member("b", "t")], t=6)
    result = UniformAssignor().assign(first)
    check_valid(first, result)
    previous = by_member(result)
    # c joins: a and b keep what they had as far as balance allows.
    second = spec([member(m, "t", target=previous[m]) for m in ("a", "b")] + [member("c", "t")], t=6)
    after = by_member(UniformAssignor().assign(second))
    assert sorted(len(a["t"]) for a in after.values()) == [2, 2, 2]
    for m in ("a", "b"):
        assert set(after[m]["t"]) <= set(previous[m]["t"])


def test_same_result_as_the_server_side_algorithms() -> None:
    s = spec(
        [
            member("m1", "x", "y", target={"x": (0, 1)}),
            member("m2", "y", target={"y": (0,)}),
            member("m3", "x", "z", target={"z": (0, 9)}),
        ],
        x=5,
        y=3,
        z=2,
    )
    group, names = to_group_spec(s)
    for client, server in ((RangeAssignor(), ServerRange()), (UniformAssignor(), ServerUniform())):
        expected = {
            m: {names[t]: tuple(sorted(p)) for t, p in a.items() if p}
            for m, a in server.assign(group).items()
        }
        assert by_member(client.assign(s)) == expected


def test_to_group_spec() -> None:
    s = spec([member("a", "x", "gone", target={"x": (0, 7), "gone": (1,)}), member("b", "x")], x=2)
    group, names = to_group_spec(s)
    (x,) = group.topics
    assert names == {x: "x"} and group.topics[x].num_partitions == 2
    assert group.members["a"].subscribed_topic_ids == frozenset({x})
    assert group.members["a"].assignment == {x: frozenset({0})}  # 7 is out of range, gone unknown
    assert group.subscription_type is SubscriptionType.HOMOGENEOUS
    other = spec([member("a", "x"), member("b", "y")], x=1, y=1)
    assert to_group_spec(other)[0].subscription_type is SubscriptionType.HETEROGENEOUS


def test_an_adapter_of_any_server_side_algorithm() -> None:
    class Renamed(ServerAlgorithmAssignor):
        name = "my-range"

    assignor = Renamed(ServerRange())
    assert assignor.name == "my-range" and ServerAlgorithmAssignor(ServerUniform()).name == "uniform"
    s = spec([member("a", "t")], t=2)
    assert by_member(assignor.assign(s)) == {"a": {"t": (0, 1)}}


def test_empty_group() -> None:
    assert RangeAssignor().assign(spec([], t=3)) == GroupAssignment()
    assert UniformAssignor().assign(spec([], t=3)) == GroupAssignment()


@st.composite
def specs(draw: st.DrawFn) -> AssignmentSpec:
    topics = {f"t{i}": draw(st.integers(0, 8)) for i in range(draw(st.integers(1, 4)))}
    members = []
    for i in range(draw(st.integers(1, 6))):
        subscribed = draw(st.sets(st.sampled_from(sorted(topics)), min_size=1))
        target = {
            t: tuple(sorted(draw(st.sets(st.integers(0, 9), max_size=4))))
            for t in draw(st.sets(st.sampled_from(sorted(topics))))
        }
        members.append(member(f"m{i}", *subscribed, target={t: p for t, p in target.items() if p}))
    return spec(members, **topics)


@settings(max_examples=150, deadline=None)
@given(specs())
def test_results_are_always_valid(s: AssignmentSpec) -> None:
    for assignor in (RangeAssignor(), UniformAssignor()):
        check_valid(s, assignor.assign(s))


@settings(max_examples=100, deadline=None)
@given(specs())
def test_uniform_balances_a_homogeneous_group(s: AssignmentSpec) -> None:
    topics = frozenset(s.topics)
    homogeneous = spec([member(m, *topics, target=dict(x.target_partitions)) for m, x in s.members.items()])
    homogeneous = AssignmentSpec(homogeneous.members, s.topics)
    counts = [a.count for a in UniformAssignor().assign(homogeneous).members.values()]
    counts += [0] * (len(s.members) - len(counts))
    assert max(counts) - min(counts) <= 1
