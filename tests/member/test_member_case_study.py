"""The KIP-848 seed's first case study (A, then B, then C join a group on foo with 3 partitions),
seen from the members, against a scripted coordinator with Kafka 4.3 epochs (facts §5.4: a new group
starts at epoch 1, so the first computed assignment is epoch 2; the seed's epochs 1/2/3 are 2/3/4)."""

from __future__ import annotations

import random

from scripted_coordinator import Key, ScriptedCoordinator, Simulation, by_join_order, foo

from kconsumer.client.member import MemberState
from kconsumer.client.member.effects import InvokeCallback, StartFetching, StopFetching
from kconsumer.client.member.events import HeartbeatResponseReceived, Subscribe, Unsubscribe
from kconsumer.client.member.model import LISTENER_CALLBACKS, CallbackKind

PLAN = {
    1: [foo(0, 1, 2)],
    2: [foo(0, 1), foo(2)],
    3: [foo(0), foo(2), foo(1)],
}


def _subscribe(sim: Simulation, name: str) -> None:
    sim.add(name).handle(Subscribe(topics=("foo",), callbacks=LISTENER_CALLBACKS))


def test_seed_case_study_one() -> None:
    coordinator = ScriptedCoordinator(by_join_order(PLAN))
    sim = Simulation(coordinator)

    # A joins: the group (created at epoch 1) moves to 2; A gets everything at epoch 2.
    _subscribe(sim, "A")
    response = sim.exchange("A")
    assert (response.member_epoch, coordinator.group_epoch) == (2, 2)
    sim.exchange("A")  # A acknowledges foo-0..2
    a = sim.runtimes["A"]
    assert sim.owned("A") == sim.fetched_by("A") == {0, 1, 2}
    assert a.core.state is MemberState.STABLE and a.core.member_epoch == 2

    # B joins: group epoch 3, target A {0, 1}, B {2}. B moves to epoch 3 but cannot get foo-2 yet.
    _subscribe(sim, "B")
    response = sim.exchange("B")
    assert response.member_epoch == 3 and response.assignment is not None
    assert response.assignment.topic_partitions == []
    assert sim.owned("B") == set()

    # A heartbeats: told to revoke foo-2 (epoch stays 2). It stops fetching it, commits, calls
    # on_partitions_revoked, and acknowledges at once; the acknowledgement moves it to epoch 3.
    response = sim.exchange("A")
    assert response.member_epoch == 2
    assert sim.owned("A") == sim.fetched_by("A") == {0, 1}
    revoked = [e for e in a.log if isinstance(e, InvokeCallback) and e.kind is CallbackKind.REVOKED]
    assert [{tp.partition for tp in e.partitions} for e in revoked] == [{2}]
    response = sim.exchange("A")
    assert response.member_epoch == 3 and a.core.member_epoch == 3

    # B heartbeats and now gets foo-2.
    response = sim.exchange("B")
    assert response.member_epoch == 3
    sim.exchange("B")  # B acknowledges
    assert sim.owned("B") == sim.fetched_by("B") == {2}

    # C joins: group epoch 4, target A {0}, B {2}, C {1}. C moves to epoch 4 without partitions.
    _subscribe(sim, "C")
    response = sim.exchange("C")
    assert response.member_epoch == 4 and sim.owned("C") == set()

    # B has nothing to revoke: straight to epoch 4 (no Assignment: its partitions did not change).
    response = sim.exchange("B")
    assert response.member_epoch == 4 and response.assignment is None
    assert sim.owned("B") == {2}

    # A revokes foo-1, acknowledges, reaches epoch 4; then C gets foo-1.
    assert sim.exchange("A").member_epoch == 3
    assert sim.exchange("A").member_epoch == 4
    assert sim.exchange("C").member_epoch == 4
    sim.exchange("C")

    assert {name: sim.owned(name) for name in "ABC"} == {"A": {0}, "B": {2}, "C": {1}}
    assert {name: sim.fetched_by(name) for name in "ABC"} == {"A": {0}, "B": {2}, "C": {1}}
    assert all(sim.runtimes[n].core.member_epoch == 4 for n in "ABC")
    assert all(sim.runtimes[n].core.state is MemberState.STABLE for n in "ABC")
    # Each member started fetching a partition only after its previous owner stopped it (checked by
    # the fake runtime on every StartFetching), and stopped before its revocation callback:
    for name in "ABC":
        log = sim.runtimes[name].log
        for i, effect in enumerate(log):
            if isinstance(effect, InvokeCallback) and effect.kind is CallbackKind.REVOKED:
                stops = [e for e in log[:i] if isinstance(e, StopFetching)]
                assert any(set(effect.partitions) <= set(s.partitions) for s in stops)


def _balanced(members: list[str]) -> dict[str, set[Key]]:
    out: dict[str, set[Key]] = {m: set() for m in members}
    for p in range(6 if members else 0):
        out[members[p % len(members)]] |= foo(p)
    return out


def test_random_schedules_never_fetch_a_partition_twice_and_converge() -> None:
    """Members join, leave and heartbeat in random orders, with lost responses (the coordinator
    processed the request); the fake runtime checks no partition is ever fetched twice."""
    for seed in range(20):
        rng = random.Random(seed)
        coordinator = ScriptedCoordinator(_balanced)
        sim = Simulation(coordinator)
        active: list[str] = []
        for step in range(120):
            roll = rng.random()
            if roll < 0.08 and len(active) < 4:
                name = f"M{step}"
                _subscribe(sim, name)
                active.append(name)
            elif roll < 0.12 and len(active) > 1:
                name = active.pop(rng.randrange(len(active)))
                runtime = sim.runtimes.pop(name)
                runtime.handle(Unsubscribe())
                while runtime.core.state is not MemberState.UNSUBSCRIBED:
                    hb = runtime.outbox.pop(0)
                    runtime.handle(
                        HeartbeatResponseReceived(hb.request_id, coordinator.heartbeat(hb.request))
                    )
            elif active:
                sim.exchange(rng.choice(active), lose_response=rng.random() < 0.1)
        for _ in range(10):  # quiet: everyone heartbeats until stable
            for name in active:
                sim.exchange(name)
        owned = [sim.owned(n) for n in active]
        assert sorted(p for s in owned for p in s) == list(range(6)), (seed, owned)
        assert all(sim.owned(n) == sim.fetched_by(n) for n in active), seed
        assert all(sim.runtimes[n].core.state is MemberState.STABLE for n in active), seed
        starts = [e for n in active for e in sim.runtimes[n].log if isinstance(e, StartFetching)]
        assert starts, seed
