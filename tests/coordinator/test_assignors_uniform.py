"""The `uniform` server-side assignor: concrete cases (facts §6.1).

Members are handled in member-id order (Kafka iterates its own member order), so the expected
assignments below follow from the algorithm the facts describe applied in that order.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from kconsumer.assignment.algorithms import UniformServerAssignor
from kconsumer.assignment.algorithms.uniform_heterogeneous import HeterogeneousBuilder
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
FOO = Uuid.from_int(0xF00)


def topics(**counts: int) -> dict[Uuid, TopicMetadata]:
    ids = {"t1": T1, "t2": T2, "t3": T3, "foo": FOO}
    return {ids[name]: TopicMetadata(ids[name], name, count) for name, count in counts.items()}


def member(
    member_id: str, subscribed: frozenset[Uuid], assignment: Mapping[Uuid, set[int]] | None = None
) -> MemberSpec:
    previous = {t: frozenset(ps) for t, ps in (assignment or {}).items()}
    return MemberSpec(member_id, None, None, subscribed, previous)


def group(
    members: list[MemberSpec], topic_meta: dict[Uuid, TopicMetadata], kind: SubscriptionType = HOMO
) -> GroupSpec:
    return GroupSpec({m.member_id: m for m in members}, topic_meta, kind)


def plain(result: Mapping[str, PartitionsByTopicId]) -> dict[str, dict[Uuid, set[int]]]:
    return {m: {t: set(ps) for t, ps in a.items()} for m, a in result.items()}


def assign(spec: GroupSpec) -> dict[str, PartitionsByTopicId]:
    result = UniformServerAssignor().assign(spec)
    validate_result(spec, result)
    return result


FOO_ONLY = frozenset({FOO})
BOTH = frozenset({T1, T2})


class TestHomogeneous:
    def test_no_members_gives_an_empty_result(self) -> None:
        assert UniformServerAssignor().assign(group([], topics(foo=3))) == {}

    def test_kip_848_case_study_first_member_takes_everything(self) -> None:
        # The KIP-848 seed's case study: one topic "foo" with 3 partitions, members A, B, C.
        result = assign(group([member("A", FOO_ONLY)], topics(foo=3)))
        assert plain(result) == {"A": {FOO: {0, 1, 2}}}

    def test_kip_848_case_study_b_joins(self) -> None:
        # A keeps two partitions (it may keep the extra one), B gets the third: the seed's picture.
        spec = group([member("A", FOO_ONLY, {FOO: {0, 1, 2}}), member("B", FOO_ONLY)], topics(foo=3))
        assert plain(assign(spec)) == {"A": {FOO: {0, 1}}, "B": {FOO: {2}}}

    def test_kip_848_case_study_c_joins(self) -> None:
        spec = group(
            [
                member("A", FOO_ONLY, {FOO: {0, 1}}),
                member("B", FOO_ONLY, {FOO: {2}}),
                member("C", FOO_ONLY),
            ],
            topics(foo=3),
        )
        assert plain(assign(spec)) == {"A": {FOO: {0}}, "B": {FOO: {2}}, "C": {FOO: {1}}}

    def test_full_assignment_gives_the_extra_partitions_to_the_last_members(self) -> None:
        # From scratch the seed would draw A={0,1}, B={2}; with KAFKA-18688 every member first
        # gives its extra slot up unless it is one of the last that must take one.
        spec = group([member("A", FOO_ONLY), member("B", FOO_ONLY)], topics(foo=3))
        assert plain(assign(spec)) == {"A": {FOO: {0}}, "B": {FOO: {1, 2}}}

    def test_full_assignment_deals_contiguous_runs_in_topic_id_order(self) -> None:
        spec = group([member(m, BOTH) for m in "ABC"], topics(t2=3, t1=4))
        assert plain(assign(spec)) == {
            "A": {T1: {0, 1}},
            "B": {T1: {2, 3}},
            "C": {T2: {0, 1, 2}},
        }

    def test_more_members_than_partitions(self) -> None:
        spec = group([member(m, FOO_ONLY) for m in "ABCD"], topics(foo=2))
        assert plain(assign(spec)) == {"A": {}, "B": {}, "C": {FOO: {0}}, "D": {FOO: {1}}}

    def test_balanced_assignment_is_returned_unchanged_even_with_the_extra_on_a_late_member(self) -> None:
        # Before KAFKA-18688 A (first) would have taken the extra slot and B would lose partition 2.
        spec = group([member("A", FOO_ONLY, {FOO: {0}}), member("B", FOO_ONLY, {FOO: {1, 2}})], topics(foo=3))
        result = assign(spec)
        assert plain(result) == {"A": {FOO: {0}}, "B": {FOO: {1, 2}}}
        # Copy on write: unchanged targets are the very same mapping objects.
        assert all(result[m] is spec.members[m].assignment for m in "AB")

    def test_over_quota_member_keeps_the_lowest_partitions_of_the_lowest_topic_ids(self) -> None:
        spec = group(
            [
                member("A", BOTH, {T1: {0, 1, 2, 3}, T2: {0, 1, 2}}),
                member("B", BOTH),
                member("C", BOTH),
            ],
            topics(t1=4, t2=3),
        )
        # 7 partitions, 3 members: quotas 2/2/3. A keeps T1 0-2 (it may take the extra slot);
        # T1-3 and T2 0-2 are given back and dealt in order to B, then C.
        assert plain(assign(spec)) == {
            "A": {T1: {0, 1, 2}},
            "B": {T1: {3}, T2: {0}},
            "C": {T2: {1, 2}},
        }

    def test_invalid_previous_targets_are_dropped(self) -> None:
        spec = group(
            [
                member("A", frozenset({T1}), {T1: {0, 1, 9}}),  # 9 is beyond the 4 partitions
                member("B", frozenset({T1}), {T1: {1, 2}}),  # 1 is already A's
                member("C", frozenset({T1}), {T2: {0}}),  # not subscribed to T2 (any more)
            ],
            topics(t1=4, t2=1),
        )
        result = assign(spec)
        assert plain(result) == {"A": {T1: {0, 1}}, "B": {T1: {2}}, "C": {T1: {3}}}
        assert result["A"] is not spec.members["A"].assignment

    def test_unsubscribed_topic_is_revoked_and_nothing_else_moves(self) -> None:
        one = frozenset({T1})
        spec = group([member("A", one, {T1: {0}, T2: {0}}), member("B", one, {T1: {1}})], topics(t1=2, t2=1))
        assert plain(assign(spec)) == {"A": {T1: {0}}, "B": {T1: {1}}}

    def test_member_joining_a_balanced_group_takes_the_minimum(self) -> None:
        spec = group(
            [
                member("A", FOO_ONLY, {FOO: {0, 1, 2}}),
                member("B", FOO_ONLY, {FOO: {3, 4, 5}}),
                member("C", FOO_ONLY, {FOO: {6, 7}}),
                member("D", FOO_ONLY),
            ],
            topics(foo=8),
        )
        result = plain(assign(spec))
        # 8 partitions, 4 members: 2 each. A gives 2 back and B gives 5 back, both to D.
        assert result == {"A": {FOO: {0, 1}}, "B": {FOO: {3, 4}}, "C": {FOO: {6, 7}}, "D": {FOO: {2, 5}}}
        for m, before in (("A", {0, 1, 2}), ("B", {3, 4, 5}), ("C", {6, 7})):
            assert result[m][FOO] <= before
            assert len(result[m][FOO]) == 2
        assert len(result["D"][FOO]) == 2

    def test_empty_subscription(self) -> None:
        spec = group([member("A", frozenset(), {T1: {0}}), member("B", frozenset())], topics(t1=1))
        assert plain(assign(spec)) == {"A": {}, "B": {}}

    def test_topics_without_partitions(self) -> None:
        spec = group([member("A", BOTH), member("B", BOTH)], topics(t1=0, t2=2))
        assert plain(assign(spec)) == {"A": {T2: {0}}, "B": {T2: {1}}}

    def test_missing_topic_raises(self) -> None:
        spec = group([member("A", frozenset({T1, T3}))], topics(t1=1))
        with pytest.raises(PartitionAssignorError, match=str(T3)):
            UniformServerAssignor().assign(spec)

    def test_a_wrong_homogeneous_flag_falls_back_to_the_heterogeneous_builder(self) -> None:
        spec = group([member("A", frozenset({T1})), member("B", frozenset({T2}))], topics(t1=2, t2=2))
        assert plain(assign(spec)) == {"A": {T1: {0, 1}}, "B": {T2: {0, 1}}}


class TestHeterogeneous:
    def test_each_topic_goes_to_its_least_loaded_subscribers(self) -> None:
        spec = group(
            [member("A", frozenset({T1})), member("B", BOTH), member("C", frozenset({T2}))],
            topics(t1=6, t2=3),
            HETERO,
        )
        # T1 first (3 partitions per subscriber against 1.5): A and B get 3 each; then T2 goes
        # to C, the least loaded of its subscribers.
        assert plain(assign(spec)) == {"A": {T1: {0, 1, 2}}, "B": {T1: {3, 4, 5}}, "C": {T2: {0, 1, 2}}}

    def test_topics_with_more_partitions_per_subscriber_go_first(self) -> None:
        # T2 (2 per subscriber) goes before T1 (1 per subscriber): A gets T2, so B gets all of T1.
        # The other order would need balancing and end with A and B sharing T1.
        spec = group([member("A", BOTH), member("B", frozenset({T1}))], topics(t1=2, t2=2), HETERO)
        assert plain(assign(spec)) == {"A": {T2: {0, 1}}, "B": {T1: {0, 1}}}

    def test_equal_ratio_topics_with_fewer_subscribers_go_first(self) -> None:
        # T1: 2 partitions for A and B; T2: 1 partition for A. Same ratio, so T2 (one subscriber)
        # goes first and A gets T2-0. Then both T1 partitions go to B: the first because B is the
        # least loaded, the second because ties go by load before the topic, as Kafka's balancer
        # does. With T1 first, A and B would get one partition of T1 each.
        spec = group([member("A", BOTH), member("B", frozenset({T1}))], topics(t1=2, t2=1), HETERO)
        assert plain(assign(spec)) == {"A": {T2: {0}}, "B": {T1: {0, 1}}}

    def test_kafka_javadoc_example_stays_almost_balanced(self) -> None:
        # Members 1 and 2 share T1, members 2 and 3 share T2, loads 9/10/11: each topic's
        # subscribers are within one partition, so nothing moves although 10/10/10 exists.
        spec = group(
            [
                member("m1", frozenset({T1}), {T1: set(range(0, 9))}),
                member("m2", BOTH, {T1: set(range(9, 19))}),
                member("m3", frozenset({T2}), {T2: set(range(0, 11))}),
            ],
            topics(t1=19, t2=11),
            HETERO,
        )
        result = assign(spec)
        assert [sum(map(len, result[m].values())) for m in ("m1", "m2", "m3")] == [9, 10, 11]
        assert all(result[m] is spec.members[m].assignment for m in ("m1", "m2", "m3"))

    def test_balancing_moves_the_giver_s_highest_partitions(self) -> None:
        spec = group(
            [
                member("A", frozenset({T1}), {T1: set(range(6))}),
                member("B", frozenset({T1})),
                member("C", frozenset({T2}), {T2: {0}}),
            ],
            topics(t1=6, t2=1),
            HETERO,
        )
        assert plain(assign(spec)) == {"A": {T1: {0, 1, 2}}, "B": {T1: {3, 4, 5}}, "C": {T2: {0}}}

    def test_unsubscribed_topics_are_dropped_then_balance_beats_stickiness(self) -> None:
        spec = group(
            [
                member("A", frozenset({T1}), {T1: {0}, T2: {0, 1}}),  # no longer wants T2
                member("B", BOTH, {T1: {1}}),
            ],
            topics(t1=2, t2=2),
            HETERO,
        )
        # T2 goes to B, its only subscriber (3 against 1), then balancing T1 moves T1-1 to A.
        assert plain(assign(spec)) == {"A": {T1: {0, 1}}, "B": {T2: {0, 1}}}

    def test_valid_previous_partitions_are_kept_when_balanced(self) -> None:
        spec = group(
            [member("A", frozenset({T1}), {T1: {1}}), member("B", BOTH, {T1: {0}})],
            topics(t1=2, t2=1),
            HETERO,
        )
        # The free T2-0 goes to B (its only subscriber); loads 1 and 2 are balanced.
        result = assign(spec)
        assert plain(result) == {"A": {T1: {1}}, "B": {T1: {0}, T2: {0}}}
        assert result["A"] is spec.members["A"].assignment

    def test_identical_subscriptions_flagged_heterogeneous_are_balanced(self) -> None:
        spec = group([member(m, BOTH) for m in "ABC"], topics(t1=5, t2=5), HETERO)
        sizes = sorted(sum(map(len, a.values())) for a in assign(spec).values())
        assert sizes == [3, 3, 4]

    def test_missing_topic_raises(self) -> None:
        spec = group([member("A", frozenset({T1})), member("B", frozenset({T3}))], topics(t1=1), HETERO)
        with pytest.raises(PartitionAssignorError, match=str(T3)):
            UniformServerAssignor().assign(spec)

    def test_a_moved_partition_prefers_its_previous_owner_then_one_the_giver_did_not_own(self) -> None:
        a_prev, b_prev = {T1: {0, 1}}, {T1: {5}}
        spec = group(
            [member("A", frozenset({T1}), a_prev), member("B", frozenset({T1}), b_prev)],
            topics(t1=8),
            HETERO,
        )
        builder = HeterogeneousBuilder(["A", "B"], [spec.members["A"], spec.members["B"]], spec.topics)
        builder._import()
        assert builder._pick(T1, {0, 1, 5, 7}, giver=0, taker=1) == 5  # back to B
        assert builder._pick(T1, {0, 1, 3, 7}, giver=0, taker=1) == 7  # not A's before
        assert builder._pick(T1, {0, 1}, giver=0, taker=1) == 1  # A's highest
