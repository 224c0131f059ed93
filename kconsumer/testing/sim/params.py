"""What one seed simulates: its configuration (`SimParams`) and its fault mix (`FaultMix`).

Swarm testing: every seed first decides which faults are on (each with its own probability) and how
often they strike, then the sizes and timeouts of its world. Everything is drawn from the seed's one
`random.Random`, in a fixed order, so a seed always describes the same run.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

#: Every fault (or feature that stresses the protocol) a seed may switch on, with what it does.
FAULTS: dict[str, str] = {
    "drop": "connections to the coordinator drop (requests in flight fail, unsent ones are lost)",
    "lost": "a request or response is lost: the connection hangs until the request timeout",
    "latency": "latency spikes on single messages",
    "partition": "a member is cut off from the cluster for a while (longer than the session timeout)",
    "failover": "the coordinator moves: a fresh coordinator replays the record log",
    "crash": "member processes are killed (no leave) and restarted with a new member id",
    "restart": "members close gracefully and restart",
    "pause": "stop-the-world pauses of a member process, some longer than the session timeout",
    "overrun": "the application stops polling for longer than max.poll.interval.ms",
    "slow_callback": "slow rebalance callbacks, some longer than the rebalance timeout",
    "add_partitions": "partitions are added to a topic",
    "recreate_topic": "a topic is deleted and created again with a new id",
    "subscription": "members change their topic subscription",
    "regex": "members subscribe with regular expressions (resolved by the coordinator)",
    "unsubscribe": "members unsubscribe and subscribe again later",
    "client_assignor": "the group uses a client-side assignor (Prepare/Install by a chosen member)",
    "static": "some members are static (group.instance.id)",
    "assignor_request": "applications ask their client-side assignor for a new assignment",
}

#: Probability that a seed switches each fault on.
_ON_PROBABILITY = 0.45


@dataclass(frozen=True)
class FaultMix:
    """Which faults are on for a seed and how often they strike.

    `counts` is the number of occurrences scheduled during the faulty phase (for event faults);
    `lost_probability` and `spike_probability` apply per message."""

    on: frozenset[str]
    counts: dict[str, int] = field(default_factory=dict)
    lost_probability: float = 0.0
    spike_probability: float = 0.0
    spike_max_ms: int = 0

    def describe(self) -> str:
        """One line: each fault that is on, with its count or rate."""
        parts = []
        for name in FAULTS:
            if name not in self.on:
                continue
            if name == "lost":
                parts.append(f"lost(p={self.lost_probability:.3f})")
            elif name == "latency":
                parts.append(f"latency(p={self.spike_probability:.3f},<={self.spike_max_ms}ms)")
            elif name in self.counts:
                parts.append(f"{name}x{self.counts[name]}")
            else:
                parts.append(name)
        return " ".join(parts) or "no faults"

    @classmethod
    def draw(cls, rng: random.Random, only: frozenset[str] | None = None) -> FaultMix:
        """Pick the faults of a seed (all from `only` when given, else each with probability ~1/2)."""
        on = set()
        for name in FAULTS:
            hit = rng.random() < _ON_PROBABILITY
            if (only is None and hit) or (only is not None and name in only):
                on.add(name)
        counts = {}
        for name, (low, high) in _COUNTS.items():
            n = rng.randint(low, high)
            if name in on:
                counts[name] = n
        lost = rng.uniform(0.002, 0.04)
        spike = rng.uniform(0.01, 0.1)
        spike_max = rng.randint(200, 2_500)
        return cls(
            frozenset(on),
            counts,
            lost_probability=lost if "lost" in on else 0.0,
            spike_probability=spike if "latency" in on else 0.0,
            spike_max_ms=spike_max if "latency" in on else 0,
        )


#: (min, max) occurrences of each event fault during the faulty phase.
_COUNTS: dict[str, tuple[int, int]] = {
    "drop": (1, 10),
    "partition": (1, 3),
    "failover": (1, 3),
    "crash": (1, 3),
    "restart": (1, 3),
    "pause": (1, 3),
    "overrun": (1, 3),
    "slow_callback": (2, 10),
    "add_partitions": (1, 3),
    "recreate_topic": (1, 2),
    "subscription": (1, 5),
    "unsubscribe": (1, 2),
    "assignor_request": (1, 4),
}

#: Topic names the world may use; patterns are written against them.
TOPIC_NAMES = ("t0", "t1", "t2", "t3")
PATTERNS = ("t[0-2]", "t.*", "t[13]", "t[02]")


@dataclass(frozen=True)
class SimParams:
    """The world of one seed: sizes, timeouts, application behaviour, network latency."""

    members: int
    topics: dict[str, int]
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    request_timeout_ms: int
    connect_timeout_ms: int
    assignment_interval_ms: int
    auto_commit: bool
    auto_commit_interval_ms: int
    manual_commit_every: int
    """Polls between manual commits (0: the application never commits itself)."""
    callbacks: bool
    """Whether applications register rebalance listeners."""
    poll_gap_ms: tuple[int, int]
    max_records_per_poll: int
    record_cost_ms: int
    callback_ms: tuple[int, int]
    latency_ms: tuple[int, int]
    fault_phase_ms: int
    produce_every_ms: int
    restart_delay_ms: tuple[int, int]
    server_assignors: tuple[str | None, ...]
    """The ServerAssignor of each member slot (None: the coordinator's default)."""
    client_assignor: str
    """The algorithm the client-side assignor runs (a server-side assignor used on the client)."""
    static_slots: frozenset[int]

    @property
    def commit_in_revoke(self) -> bool:
        """Applications commit the revoked partitions' positions inside on_partitions_revoked
        (confluent-kafka's at-least-once idiom: ``commit()`` in on_revoke). Derived, not drawn,
        so that seeds without it keep their course."""
        return self.callbacks and self.manual_commit_every == 3

    @property
    def store_offsets(self) -> bool:
        """Applications store the offsets of what they processed themselves
        (``enable.auto.offset.store=false`` and ``store_offsets()`` after each batch): every
        commit of "owned partitions" carries what was stored. Derived, not drawn, so that seeds
        without it keep their course."""
        return self.record_cost_ms == 0

    @classmethod
    def draw(cls, rng: random.Random, faults: FaultMix) -> SimParams:
        """Draw a world consistent with `faults`."""
        members = rng.randint(2, 5)
        n_topics = rng.randint(1, 3)
        topics = {name: rng.randint(1, 4) for name in TOPIC_NAMES[:n_topics]}
        session = rng.randint(3_000, 6_000)
        heartbeat = rng.randint(200, session // 4)
        max_poll = rng.randint(4_000, 10_000)
        request_timeout = rng.randint(800, max(900, session // 2))
        server_assignors = tuple(rng.choice((None, None, "uniform", "range")) for _ in range(members))
        static = frozenset(slot for slot in range(members) if "static" in faults.on and rng.random() < 0.6)
        return cls(
            members=members,
            topics=topics,
            session_timeout_ms=session,
            heartbeat_interval_ms=heartbeat,
            max_poll_interval_ms=max_poll,
            request_timeout_ms=request_timeout,
            connect_timeout_ms=rng.randint(300, 1_500),
            assignment_interval_ms=rng.choice((0, 0, 300, 1_000)),
            auto_commit=rng.random() < 0.75,
            auto_commit_interval_ms=rng.randint(200, 2_000),
            manual_commit_every=rng.choice((0, 0, 1, 3, 10)),
            callbacks=rng.random() < 0.7,
            poll_gap_ms=(rng.randint(10, 60), rng.randint(60, 300)),
            max_records_per_poll=rng.randint(1, 20),
            record_cost_ms=rng.randint(0, 4),
            callback_ms=(0, rng.randint(0, 60)),
            latency_ms=(rng.randint(0, 3), rng.randint(3, 40)),
            fault_phase_ms=rng.randint(10_000, 20_000),
            produce_every_ms=rng.randint(40, 250),
            restart_delay_ms=(rng.randint(100, 1_000), rng.randint(1_000, 4_000)),
            server_assignors=server_assignors,
            client_assignor=rng.choice(("uniform", "range")),
            static_slots=static,
        )

    def describe(self) -> str:
        """One line with the main sizes and timeouts."""
        topics = ",".join(f"{name}:{n}" for name, n in self.topics.items())
        return (
            f"members={self.members} static={sorted(self.static_slots)} topics={topics} "
            f"session={self.session_timeout_ms} hb={self.heartbeat_interval_ms} "
            f"max_poll={self.max_poll_interval_ms} req_timeout={self.request_timeout_ms} "
            f"assign_interval={self.assignment_interval_ms} auto_commit="
            f"{self.auto_commit_interval_ms if self.auto_commit else 'off'} "
            f"manual_commit_every={self.manual_commit_every} callbacks={self.callbacks}"
            f"{' commit_in_revoke' if self.commit_in_revoke else ''}"
        )
