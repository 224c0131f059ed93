"""The member core with ``group.protocol=classic``: the JoinGroup/SyncGroup/Heartbeat/LeaveGroup
conversation (seed 004) with eager and cooperative (KIP-429) rebalancing, driven with a fake clock.

What these pin down: an eager member revokes everything before it sends its JoinGroup; a
cooperative one joins at once reporting what it owns, revokes what the new assignment leaves out
and rejoins once that is done; commits carry the generation; fencing errors lose the partitions;
a static member does not send LeaveGroup."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from member_driver import MEMBER_ID, TOPIC_IDS, Driver, tps

from kconsumer.client.member import MemberState
from kconsumer.client.member.effects import (
    ClassicApi,
    CommitOffsets,
    Effect,
    InvokeCallback,
    RefreshMetadata,
    ReportError,
    SendClassicRequest,
)
from kconsumer.client.member.events import (
    ClassicResponseReceived,
    Close,
    CommitRequested,
    MetadataUpdated,
    Poll,
    Subscribe,
)
from kconsumer.client.member.model import LISTENER_CALLBACKS, CallbackKind, ClassicMember, ClassicSettings
from kconsumer.errors import ErrorCode
from kconsumer.protocol.consumer_protocol import (
    ConsumerSubscription,
    decode_consumer_protocol,
    encode_consumer_protocol,
)
from kconsumer.protocol.messages.classic_group import JoinGroupRequest
from kconsumer.protocol.uuid import Uuid

S = MemberState
INTERVAL = 1_000


def classic(cooperative: bool = False, **config: Any) -> Driver:
    strategy = "cooperative-sticky" if cooperative else "range"
    settings = ClassicSettings(
        (strategy,),
        cooperative,
        session_timeout_ms=10_000,
        heartbeat_interval_ms=INTERVAL,
        metadata_refresh_ms=5_000,
    )
    return Driver(member_id=MEMBER_ID, classic=settings, **config)


def in_flight(driver: Driver) -> SendClassicRequest:
    pending = driver.pending(SendClassicRequest)
    assert len(pending) == 1, pending
    return pending[0]


def answer(driver: Driver, **fields: Any) -> list[Effect]:
    request = in_flight(driver)
    driver.answered.add(request.request_id)
    return driver.send(ClassicResponseReceived(request.request_id, **fields))


def by_id(spec: Mapping[str, Iterable[int]]) -> dict[Any, tuple[int, ...]]:
    return {TOPIC_IDS[t]: tuple(p) for t, p in spec.items()}


def owned_in_join(request: SendClassicRequest) -> dict[str, list[int]]:
    assert request.api is ClassicApi.JOIN and isinstance(request.request, JoinGroupRequest)
    subscription = decode_consumer_protocol(ConsumerSubscription, request.request.protocols[0].metadata)[0]
    return {o.topic: sorted(o.partitions) for o in subscription.owned_partitions}


def callbacks(effects: Iterable[Effect], kind: CallbackKind) -> list[tuple[str, int]]:
    return [
        (p.topic, p.partition)
        for e in effects
        if isinstance(e, InvokeCallback) and e.kind is kind
        for p in e.partitions
    ]


def join(driver: Driver, assignment: Mapping[str, Iterable[int]], generation: int = 1) -> list[Effect]:
    """Subscribe to foo, join (as the leader), sync `assignment`, reconcile: STABLE."""
    driver.send(Subscribe(topics=("foo",), callbacks=LISTENER_CALLBACKS))
    driver.metadata()
    return rejoin(driver, assignment, generation)


def rejoin(driver: Driver, assignment: Mapping[str, Iterable[int]], generation: int) -> list[Effect]:
    effects = answer(driver, member_id="m-1", generation=generation, protocol_name="range", leader_id="m-1")
    sync = in_flight(driver)
    assert sync.api is ClassicApi.SYNC
    effects += answer(driver, assignment=by_id(assignment))
    driver.settle()
    acknowledge(driver)
    return effects + driver.all


def acknowledge(driver: Driver) -> None:
    """Answer the Heartbeat a finished reconciliation sends at once (if it was the last step)."""
    pending = driver.pending(SendClassicRequest)
    if pending and pending[0].api is ClassicApi.HEARTBEAT:
        answer(driver)


def test_join_sync_and_heartbeat_with_member_id_required() -> None:
    driver = classic()
    driver.send(Subscribe(topics=("foo",), callbacks=LISTENER_CALLBACKS))
    first = in_flight(driver)
    assert first.api is ClassicApi.JOIN and isinstance(first.request, JoinGroupRequest)
    assert first.request.member_id == "" and first.request.protocol_type == "consumer"
    assert [p.name for p in first.request.protocols] == ["range"]
    answer(driver, error=ErrorCode.MEMBER_ID_REQUIRED, member_id="m-1")
    again = in_flight(driver)  # at once, with the id the coordinator gave
    assert again.api is ClassicApi.JOIN and isinstance(again.request, JoinGroupRequest)
    assert again.request.member_id == "m-1"
    members = (ClassicMember("m-1", None, first.request.protocols[0].metadata),)
    answer(driver, member_id="m-1", generation=3, protocol_name="range", leader_id="m-1", members=members)
    sync = in_flight(driver)
    assert sync.api is ClassicApi.SYNC and sync.members == members and sync.strategy == "range"
    assert driver.state is S.JOINING
    answer(driver, assignment=by_id({"foo": [0, 1]}))
    driver.metadata()
    driver.settle()
    assert driver.state is S.STABLE
    assert driver.core.member_id == "m-1" and driver.core.member_epoch == 3
    assert driver.core.assignment == tps({"foo": [0, 1]})
    assert callbacks(driver.all, CallbackKind.ASSIGNED) == [("foo", 0), ("foo", 1)]
    acknowledge(driver)
    assert not driver.pending(SendClassicRequest)
    driver.advance(INTERVAL)
    beat = in_flight(driver)
    assert beat.api is ClassicApi.HEARTBEAT
    assert beat.request is not None and beat.request.generation_id == 3  # type: ignore[attr-defined]
    driver.send(CommitRequested(token=7, offsets=None, sync=False))
    commit = driver.pending(CommitOffsets)[-1]
    assert (commit.member_id, commit.member_epoch) == ("m-1", 3)  # the generation


def test_eager_member_revokes_everything_before_it_rejoins() -> None:
    driver = classic()
    join(driver, {"foo": [0, 1]})
    driver.advance(INTERVAL)
    answer(driver, error=ErrorCode.REBALANCE_IN_PROGRESS)
    assert not driver.pending(SendClassicRequest), "no JoinGroup while it still owns partitions"
    driver.settle()
    assert callbacks(driver.all, CallbackKind.REVOKED) == [("foo", 0), ("foo", 1)]
    request = in_flight(driver)
    assert owned_in_join(request) == {}
    assert driver.core.assignment == ()
    before = len(driver.all)
    rejoin(driver, {"foo": [1]}, generation=2)
    assert callbacks(driver.all[before:], CallbackKind.ASSIGNED) == [("foo", 1)]
    assert driver.core.assignment == tps({"foo": [1]}) and driver.core.member_epoch == 2


def test_cooperative_member_keeps_what_it_may_and_rejoins_after_revoking() -> None:
    driver = classic(cooperative=True)
    join(driver, {"foo": [0, 1, 2]})
    driver.advance(INTERVAL)
    answer(driver, error=ErrorCode.REBALANCE_IN_PROGRESS)
    request = in_flight(driver)  # at once: it keeps consuming while the group rebalances
    assert owned_in_join(request) == {"foo": [0, 1, 2]}
    before = len(driver.all)
    answer(driver, member_id="m-1", generation=2, protocol_name="cooperative-sticky", leader_id="other")
    assert in_flight(driver).members == ()  # not the leader
    answer(driver, assignment=by_id({"foo": [0]}))
    assert not driver.pending(SendClassicRequest), "no JoinGroup before 1 and 2 are revoked"
    driver.settle()
    assert callbacks(driver.all[before:], CallbackKind.REVOKED) == [("foo", 1), ("foo", 2)]
    assert callbacks(driver.all[before:], CallbackKind.LOST) == []
    second = in_flight(driver)  # KIP-429: the second rebalance, once 1 and 2 are given up
    assert owned_in_join(second) == {"foo": [0]}
    before = len(driver.all)
    rejoin(driver, {"foo": [0]}, generation=3)
    assert callbacks(driver.all[before:], CallbackKind.REVOKED) == []
    assert driver.state is S.STABLE and driver.core.assignment == tps({"foo": [0]})
    assert not driver.pending(SendClassicRequest)


def test_a_subscription_change_while_revoking_before_a_rejoin_revokes_the_rest_too() -> None:
    """Simulation seed 1221765: a cooperative member revoking what an assignment took away
    changed its subscription meanwhile; it had been asked to release only the first part and
    heartbeated for ever, never rejoining, its other partitions given to nobody."""
    driver = classic(cooperative=True)
    join(driver, {"foo": [0, 1, 2]})
    driver.advance(INTERVAL)
    answer(driver, error=ErrorCode.REBALANCE_IN_PROGRESS)
    answer(driver, member_id="m-1", generation=2, protocol_name="cooperative-sticky", leader_id="other")
    answer(driver, assignment=by_id({"foo": [0]}))  # 1 and 2 are to be revoked before rejoining
    driver.send(Subscribe(topics=("bar",), callbacks=LISTENER_CALLBACKS))
    for _ in range(5):
        driver.settle()
        driver.metadata()
        if driver.pending(SendClassicRequest) and in_flight(driver).api is ClassicApi.JOIN:
            break
        acknowledge(driver)
        driver.advance(INTERVAL)
    assert sorted(callbacks(driver.all, CallbackKind.REVOKED)) == [("foo", 0), ("foo", 1), ("foo", 2)]
    request = in_flight(driver)
    assert request.api is ClassicApi.JOIN and owned_in_join(request) == {}


def _lead_with(driver: Driver, *, held_back: bool) -> int:
    """Join as the leader and sync {foo: [0]}; returns how many heartbeat intervals pass until
    a JoinGroup goes (0: none within twice the rebalance timeout)."""
    driver.send(Subscribe(topics=("foo",), callbacks=LISTENER_CALLBACKS))
    driver.metadata()
    answer(driver, member_id="m-1", generation=1, protocol_name="cooperative-sticky", leader_id="m-1")
    answer(driver, assignment=by_id({"foo": [0]}), held_back=held_back)
    driver.settle()
    acknowledge(driver)
    for step in range(1, 2 * driver.core.config.rebalance_timeout_ms // INTERVAL):
        driver.advance(INTERVAL)
        driver.send(Poll())  # the application polls: no poll-interval overrun
        pending = driver.pending(SendClassicRequest)
        if pending and pending[0].api is ClassicApi.JOIN:
            return step
        if pending:
            answer(driver)
    return 0


def test_a_leader_rebalances_when_partitions_it_held_back_stay_with_nobody() -> None:
    """Simulation seed 1220779: the cooperative leader held back partitions an old incarnation of
    a static member reported owning; the new incarnation took over its assignment without a
    rebalance, owned nothing to revoke and never rejoined: the partitions stayed with nobody."""
    steps = _lead_with(classic(cooperative=True, rebalance_timeout_ms=20_000), held_back=True)
    assert 20 <= steps <= 22  # a rebalance timeout after the sync
    assert _lead_with(classic(cooperative=True, rebalance_timeout_ms=20_000), held_back=False) == 0


def test_illegal_generation_loses_the_partitions_and_rejoins_with_the_same_id() -> None:
    driver = classic()
    join(driver, {"foo": [0]})
    driver.advance(INTERVAL)
    answer(driver, error=ErrorCode.ILLEGAL_GENERATION)
    driver.settle()
    assert callbacks(driver.all, CallbackKind.LOST) == [("foo", 0)]
    request = in_flight(driver)
    assert request.api is ClassicApi.JOIN and request.request.member_id == "m-1"  # type: ignore[union-attr]


def test_unknown_member_id_rejoins_without_an_id() -> None:
    driver = classic()
    join(driver, {"foo": [0]})
    driver.advance(INTERVAL)
    answer(driver, error=ErrorCode.UNKNOWN_MEMBER_ID)
    driver.settle()
    request = in_flight(driver)
    assert request.api is ClassicApi.JOIN and request.request.member_id == ""  # type: ignore[union-attr]


def test_fenced_instance_id_is_fatal() -> None:
    driver = classic(instance_id="i-1")
    join(driver, {"foo": [0]})
    driver.advance(INTERVAL)
    effects = answer(driver, error=ErrorCode.FENCED_INSTANCE_ID)
    assert driver.state is S.FATAL
    assert any(isinstance(e, ReportError) and e.fatal for e in effects)


def test_a_heartbeat_error_it_does_not_act_on_is_retried_and_a_refused_join_is_fatal() -> None:
    """As Kafka's classic consumer: a Heartbeat refused with GROUP_AUTHORIZATION_FAILED (or an
    error it has no rule for) is sent again after the backoff and the member keeps its
    partitions; the same refusal of a JoinGroup ends the member."""
    driver = classic()
    join(driver, {"foo": [0]})
    for code in (ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_SERVER_ERROR):
        driver.advance(INTERVAL)
        effects = answer(driver, error=code)
        driver.settle()
        assert driver.state is S.STABLE and driver.core.assignment == tps({"foo": [0]})
        assert not any(isinstance(e, ReportError) for e in effects)
        assert not callbacks(driver.all, CallbackKind.LOST)
        driver.advance(INTERVAL)
        assert in_flight(driver).api is ClassicApi.HEARTBEAT
        answer(driver)
    driver.advance(INTERVAL)
    answer(driver, error=ErrorCode.UNKNOWN_MEMBER_ID)
    driver.settle()
    effects = answer(driver, error=ErrorCode.GROUP_AUTHORIZATION_FAILED)  # the JoinGroup
    assert driver.state is S.FATAL
    assert any(isinstance(e, ReportError) and e.fatal for e in effects)


def test_a_dynamic_member_leaves_and_a_static_one_does_not() -> None:
    for instance_id, sends in ((None, True), ("i-1", False)):
        driver = classic(instance_id=instance_id)
        join(driver, {"foo": [0]})
        driver.send(Close())
        driver.settle()
        leave = in_flight(driver)
        assert leave.api is ClassicApi.LEAVE
        assert (leave.request is not None) is sends
        answer(driver)
        assert driver.state is S.UNSUBSCRIBED


def test_a_subscription_change_makes_an_eager_member_revoke_and_rejoin() -> None:
    driver = classic()
    join(driver, {"foo": [0]})
    driver.send(Subscribe(topics=("foo", "bar"), callbacks=LISTENER_CALLBACKS))
    driver.settle()
    assert callbacks(driver.all, CallbackKind.REVOKED) == [("foo", 0)]
    request = in_flight(driver)
    assert request.api is ClassicApi.JOIN
    subscription = decode_consumer_protocol(
        ConsumerSubscription,
        request.request.protocols[0].metadata,  # type: ignore[union-attr]
    )[0]
    assert subscription.topics == ["bar", "foo"] and subscription.generation_id == 1


def test_a_topic_created_again_or_grown_makes_the_member_rejoin() -> None:
    driver = classic(cooperative=True)
    join(driver, {"foo": [0]})
    names = {tid: name for name, tid in TOPIC_IDS.items()}
    driver.send(MetadataUpdated(names, {"foo": 2}))  # as it was at the assignment: nothing to do
    assert not driver.pending(SendClassicRequest)
    refreshes = [e for e in driver.advance(5_000) if isinstance(e, RefreshMetadata)]
    assert refreshes and refreshes[0].topic_names == ("foo",)  # every metadata_refresh_ms
    acknowledge(driver)
    driver.send(MetadataUpdated(names, {"foo": 3}))  # foo grew: the leader must assign it anew
    request = in_flight(driver)
    assert request.api is ClassicApi.JOIN and owned_in_join(request) == {"foo": [0]}


def test_the_leader_watches_the_topics_of_every_member_it_assigned() -> None:
    """The leader assigned bar, which only another member subscribes to, with the partition count
    it saw while syncing; bar then grows: the leader joins again so the new partitions get an
    owner (the other member saw the larger count before its assignment came and never rejoins)."""
    driver = classic(cooperative=True)
    driver.send(Subscribe(topics=("foo",), callbacks=LISTENER_CALLBACKS))
    driver.metadata()
    own = in_flight(driver).request.protocols[0].metadata  # type: ignore[union-attr]
    other = encode_consumer_protocol(ConsumerSubscription(topics=["bar"]))
    members = (ClassicMember("m-1", None, own), ClassicMember("m-2", None, other))
    answer(
        driver,
        member_id="m-1",
        generation=1,
        protocol_name="cooperative-sticky",
        leader_id="m-1",
        members=members,
    )
    names = {tid: name for name, tid in TOPIC_IDS.items()}
    driver.send(MetadataUpdated(names, {"foo": 1, "bar": 7}))  # what the leader assigns with
    answer(driver, assignment=by_id({"foo": [0]}))
    driver.settle()
    acknowledge(driver)
    driver.send(MetadataUpdated(names, {"foo": 1, "bar": 7}))  # unchanged: nothing to do
    assert not driver.pending(SendClassicRequest)
    refreshes = [e for e in driver.advance(5_000) if isinstance(e, RefreshMetadata)]
    assert refreshes and refreshes[0].topic_names == ("bar", "foo")  # it watches bar too
    acknowledge(driver)
    driver.send(MetadataUpdated(names, {"foo": 1, "bar": 9}))  # bar grew
    assert in_flight(driver).api is ClassicApi.JOIN


def subscribed_in_join(request: SendClassicRequest) -> list[str]:
    assert request.api is ClassicApi.JOIN and isinstance(request.request, JoinGroupRequest)
    return decode_consumer_protocol(ConsumerSubscription, request.request.protocols[0].metadata)[0].topics


def test_a_pattern_is_matched_against_every_topic_and_followed() -> None:
    driver = classic(cooperative=True)
    names = {tid: name for name, tid in TOPIC_IDS.items()}
    effects = driver.send(Subscribe(pattern="^fo", callbacks=LISTENER_CALLBACKS))
    # Every topic's metadata at once (no names: all of them); the first join knows no topic yet.
    assert [e.topic_names for e in effects if isinstance(e, RefreshMetadata)] == [()]
    assert subscribed_in_join(in_flight(driver)) == []
    answer(driver, member_id="m-1", generation=1, protocol_name="cooperative-sticky", leader_id="m-1")
    answer(driver, assignment={})
    driver.settle()
    acknowledge(driver)
    # Anywhere in the name as librdkafka's classic consumer (re.search), internal topics left out.
    driver.send(MetadataUpdated(names, {"foo": 2, "bar": 1, "xfoo": 1, "__fo": 1}))
    assert subscribed_in_join(in_flight(driver)) == ["foo"]
    rejoin(driver, {"foo": [0, 1]}, generation=2)
    assert driver.state is S.STABLE
    driver.send(MetadataUpdated(names, {"foo": 2, "bar": 1, "xfoo": 1, "__fo": 1}))
    assert not driver.pending(SendClassicRequest)  # the same matches: nothing to do
    driver.send(MetadataUpdated(names, {"foo": 2, "bar": 1, "fob": 1}))  # fob created
    assert subscribed_in_join(in_flight(driver)) == ["fob", "foo"]


def test_a_returning_static_leader_rebalances_a_stale_group_assignment() -> None:
    """Simulation seed 1240335: a static leader came back (JoinGroup v9 skip_assignment) to an
    assignment computed before its topic was deleted and created again with 1 partition of 4; it
    gave out 0-3, nothing was missing, and the member kept a target of partitions that no longer
    existed. Partitions given out that are gone make it rebalance too, as missing ones do."""
    from kconsumer.client.member.calls import ForClassic
    from kconsumer.client.member.classic_routes import StrategyRuns, metadata_learnt
    from kconsumer.client.member.cluster import ClusterView
    from kconsumer.client.member.effects import Node

    cluster = ClusterView((Node("localhost", 9092),))
    cluster.partition_counts = {"t0": 1, "t1": 2}
    covered = frozenset({("t0", 0), ("t0", 1), ("t0", 2), ("t0", 3), ("t1", 0), ("t1", 1)})
    stale = ForClassic(7, names={"t0": [0, 1, 2, 3]}, check=(frozenset({"t0", "t1"}), covered))
    [event] = metadata_learnt(stale, cluster, StrategyRuns(None)).events
    assert isinstance(event, ClassicResponseReceived) and event.error is ErrorCode.REBALANCE_IN_PROGRESS
    fine = ForClassic(
        7, names={"t0": [0]}, check=(frozenset({"t0", "t1"}), covered - {("t0", 1), ("t0", 2), ("t0", 3)})
    )
    assert all(
        not isinstance(e, ClassicResponseReceived) or e.error is ErrorCode.NONE
        for e in metadata_learnt(fine, cluster, StrategyRuns(None)).events
    )


def test_an_assignment_whose_topic_ids_could_not_be_read_is_not_resolved_later() -> None:
    """Simulation seed 1301784 (mixed): a SyncGroup answer named t2; the Metadata asked for its id
    timed out, and the retry was answered after t2 had been deleted and created again, so the
    member fetched the new t2's partition, which nobody had given it. A failed lookup of the
    assigned names makes the member join again; it is never sent again."""
    from kconsumer.client.member.calls import ForClassic, MetadataCall
    from kconsumer.client.member.classic_routes import StrategyRuns, metadata_learnt
    from kconsumer.client.member.cluster import ClusterView
    from kconsumer.client.member.effects import Node

    cluster = ClusterView((Node("localhost", 9092),))
    assigned = ForClassic(7, names={"t2": [0]})
    step = metadata_learnt(assigned, cluster, StrategyRuns(None), failed=True)
    assert not any(isinstance(call, MetadataCall) for call in step.to_any)
    [event] = step.events
    assert isinstance(event, ClassicResponseReceived) and event.error is ErrorCode.REBALANCE_IN_PROGRESS


def test_a_joining_member_learns_its_topics_ids_first_and_leaves_out_a_topic_created_again_since() -> None:
    """Simulation seed 1381343 (mixed): a classic member joined before it knew its subscribed
    topic's id; the topic was deleted and created again between the SyncGroup answer (computed
    for the old topic) and the Metadata answer for its names, so the member took the new topic's
    partition, which nobody had given it. A JoinGroup now carries the subscribed names without a
    known id, the session looks them up before sending it, and an assigned name whose id changed
    since then is left out (the member joins again)."""
    old, new = TOPIC_IDS["foo"], Uuid.from_int(999)
    driver = classic()
    driver.send(Subscribe(topics=("foo",), callbacks=LISTENER_CALLBACKS))
    joining = in_flight(driver)
    assert joining.api is ClassicApi.JOIN and joining.unknown_topics == ("foo",)
    driver.send(MetadataUpdated({old: "foo"}, {"foo": 2}))  # what the lookup found, before the join goes
    answer(driver, member_id="m-1", generation=1, protocol_name="range", leader_id="m-0")
    assert in_flight(driver).api is ClassicApi.SYNC
    driver.send(MetadataUpdated({new: "foo"}, {"foo": 2}))  # the answer's names, after foo was recreated
    effects = answer(driver, assignment={new: (0,)})
    driver.settle()
    assert not callbacks(effects + driver.all, CallbackKind.ASSIGNED)
    again = in_flight(driver)
    assert again.api is ClassicApi.JOIN and again.unknown_topics == ()  # its id is known now


def test_a_join_whose_topics_ids_are_known_goes_at_once() -> None:
    driver = classic()
    driver.send(Subscribe(topics=("foo",), callbacks=LISTENER_CALLBACKS))
    driver.metadata()
    answer(driver, error=ErrorCode.REBALANCE_IN_PROGRESS)  # joins again, with foo's id known
    assert in_flight(driver).unknown_topics == ()


def test_an_assignment_of_a_topic_it_does_not_subscribe_to_is_not_taken_and_it_rejoins() -> None:
    """Simulation seed 1461400 (mixed): a static member restarted subscribed to other topics; the
    group stayed Stable (Kafka's rule when the protocol does not change) and gave it its stored
    assignment, of a topic it no longer subscribed to. Like Kafka's consumer it takes none of it
    and joins again; that JoinGroup carries the generation it was given, so its metadata differs
    from the restart's and the coordinator rebalances."""
    driver = classic(instance_id="i-1")
    driver.send(Subscribe(topics=("foo",), callbacks=LISTENER_CALLBACKS))
    driver.metadata()
    first = in_flight(driver)
    assert first.api is ClassicApi.JOIN
    answer(driver, member_id="m-1", generation=4, protocol_name="range", leader_id="other")
    answer(driver, assignment=by_id({"bar": [0], "foo": [1]}))
    driver.settle()
    assert callbacks(driver.all, CallbackKind.ASSIGNED) == []
    assert not driver.core.assignment
    again = in_flight(driver)
    assert again.api is ClassicApi.JOIN and isinstance(again.request, JoinGroupRequest)
    subscription = decode_consumer_protocol(ConsumerSubscription, again.request.protocols[0].metadata)[0]
    assert subscription.topics == ["foo"] and subscription.generation_id == 4
    rejoin(driver, {"foo": [0, 1]}, generation=5)
    assert driver.core.assignment == tps({"foo": [0, 1]})


def test_the_same_unsubscribed_assignment_again_makes_it_rejoin_after_a_backoff() -> None:
    """When its rejoin did not make the coordinator rebalance (the same generation, the same
    assignment naming a topic it does not subscribe to), the member joins again after the retry
    backoff rather than at once: no tight loop of JoinGroups against a group that will not change."""
    driver = classic()
    driver.send(Subscribe(topics=("foo",), callbacks=LISTENER_CALLBACKS))
    driver.metadata()
    for attempt in range(2):
        answer(driver, member_id="m-1", generation=4, protocol_name="range", leader_id="other")
        answer(driver, assignment=by_id({"bar": [0]}))
        driver.settle()
        if attempt == 0:
            assert in_flight(driver).api is ClassicApi.JOIN  # at once the first time
    assert not driver.pending(SendClassicRequest)
    driver.run_until_idle(limit=1_000)
    assert in_flight(driver).api is ClassicApi.JOIN
    assert not driver.core.assignment
    answer(driver, member_id="m-1", generation=5, protocol_name="range", leader_id="other")
    assert in_flight(driver).api is ClassicApi.SYNC  # the backoff was the JoinGroup's alone
