"""The invariants checked while a seed runs (see docs/simulation.md for the precise statements).

*Zombie*: a live member process whose member id is no longer a member of the group on the
coordinator (removed by a session or rebalance timeout, a leave, a static replacement) but which
does not know it yet. The protocol cannot stop a zombie before it next hears from the coordinator
(the coordinator hands its partitions to others once it is removed), so the client-side
exclusivity invariants exempt zombies; instead, zombies are checked never to act on a partition
after their core has given it up, to give everything up as soon as a heartbeat response from a
coordinator that removed them arrives, and to be gone once faults stop (liveness). Their overlap
with other members is counted.

Checked after every step that can change them (and the members' timing: `timing`):

* coordinator: no partition in two members' assigned-or-pending-revocation sets; the group epoch
  never decreases; assignment epoch <= group epoch; member epochs <= group epoch and never
  decrease while the member stays in the group (a temporary static leave, -2, ends that);
  a failed-over coordinator has exactly the old one's state;
* client: a non-zombie application fetches (holds) a partition only while the coordinator has it
  in that member's assigned-or-pending-revocation set, so no two non-zombie members fetch (hold)
  a partition at once; an application processes records only of partitions its core owns; core
  epochs never exceed the group epoch and never decrease between joins; a closed member fetches
  and holds nothing; a heartbeat response from a coordinator that removed the member leaves its
  core owning nothing;
* commits: an accepted commit of a partition comes from the member holding it on the coordinator,
  never goes below the previous commit of the same topic id and partition (a recreated topic has a
  new id: that is the only "reset"), and never goes past what has been processed; the
  coordinator's stored offsets are exactly the accepted ones; offsets are deleted only for deleted
  topic ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...broker.coordinator import GroupCoordinator
from ...broker.coordinator.records import (
    ClassicGroupTombstone,
    ConsumerGroupTombstone,
    GroupEpochRecord,
    OffsetCommitRecord,
    OffsetTombstone,
    Record,
)
from ...client.member import MemberState
from ...client.member.effects import Effect, InvokeCallback, SendRequest, StartFetching, StopFetching
from ...client.member.model import CallbackKind, CommitReason
from ...client.member.state import IN_GROUP
from ...protocol.messages.offsets import OffsetCommitRequest
from .coverage import Coverage
from .host import GROUP
from .timing import late_heartbeat
from .topics import Key

if TYPE_CHECKING:
    from .runtime import SimMember
    from .world import World

#: "fetch" / "hold" as verbs in messages.
_VERB = {"fetch": "fetches", "hold": "holds"}

#: States in which the core has just declared its partitions lost.
_LOSING = frozenset({MemberState.FENCED, MemberState.FATAL, MemberState.STALE})


@dataclass(frozen=True)
class Violation:
    """One broken invariant."""

    kind: str
    time_ms: int
    message: str

    def __str__(self) -> str:
        return f"[{self.kind}] at {self.time_ms} ms: {self.message}"


@dataclass
class ZombieStats:
    """How much zombies overlapped with the rest of the group."""

    episodes: int = 0
    fetch_ms: int = 0
    records: int = 0
    longest_ms: int = 0


class Checker:
    """Checks the invariants; `violations` holds what broke (the run stops at the first)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.host = world.host
        self.topics = world.topics
        self.sched = world.sched
        self.violations: list[Violation] = []
        self.members: frozenset[str] = frozenset()
        self.fetchers: dict[Key, set[SimMember]] = {}
        self.holders: dict[Key, set[SimMember]] = {}
        self.coverage: dict[Key, Coverage] = {}
        self.committed: dict[Key, int] = {}
        self.max_group_epoch = 0
        #: The highest epoch handed to a member: a classic group's generation counts from its
        #: JoinGroup answers on, stored or not (a rebalance that failed at SyncGroup is not).
        self.max_epoch_handed_out = 0
        self._classic_was_empty = False
        #: The epoch a non-empty classic group was converted at (its classic assignment is the
        #: target until the next epoch bump, partitions added since then included, as in Kafka).
        self.converted_at_epoch: int | None = None
        #: The classic generation it was converted from (its members' epoch then).
        self.converted_generation: int | None = None
        #: A classic group's last completed generation, while it prepares the next one too (a
        #: static member left out of it is a zombie meanwhile); None: a consumer group.
        self._classic_generation: int | None = None
        self._coordinator_epochs: dict[str, int] = {}
        self._client_epochs: dict[str, int] = {}
        self.zombies = ZombieStats()
        self._zombie_since: dict[str, int] = {}
        self._lost: dict[str, set[Key]] = {}
        #: Records processed, reprocessing included (the drain's measure of progress).
        self.records_processed = 0
        #: (member, commit token) answers reported as kept (`commit-answer-kept`), each once.
        self._kept_answers: set[tuple[str, int]] = set()

    # -- reporting ------------------------------------------------------------------------------------

    def violation(self, kind: str, message: str) -> None:
        """Record a broken invariant (and trace it)."""
        found = Violation(kind, self.sched.now, message)
        self.violations.append(found)
        self.world.trace.log(self.sched.now, "CHECK", str(found))

    def _zombie(self, proc: SimMember) -> bool:
        """Not a member, or (classic) a member left out of the current generation: a static
        member that did not rejoin in time stays in the group, but the generation went on
        without it (the coordinator answers it ILLEGAL_GENERATION, as Kafka does), and stays left
        out in the consumer group it is converted into (whose epochs start at that generation)."""
        if proc.group_member_id not in self.members or proc.classic is None:
            return proc.group_member_id not in self.members
        if (generation := self._classic_generation) is not None:
            return proc.joined_generation != generation
        return self.converted_generation is not None and proc.joined_generation < self.converted_generation

    def _label(self, key: Key) -> str:
        return self.topics.short(key)

    # -- coordinator steps ----------------------------------------------------------------------------

    def after_coordinator_step(self, records: list[Record], kind: str, sender: str) -> None:
        """Records were written (any request, timer or metadata change)."""
        group = self.host.group()
        if group is None:
            self._after_classic_step(records, kind, sender)
            return
        if kind in ("commit", "txn", "txn-end"):
            # Offset commits (plain, or pending and completed in a transaction) change offsets
            # only (not members, epochs or assignments).
            for record in records:
                if isinstance(record, OffsetCommitRecord):
                    self._committed(record, sender, kind)
            self._check_stored_offsets(self.host.last, records)
            return
        if records or kind == "hb":
            self.members = frozenset(group.members)
            self._classic_generation = None
        converted = any(isinstance(r, ClassicGroupTombstone) for r in records)
        if self._classic_was_empty and converted:
            # An empty classic group deleted for a consumer-protocol join: a new group, epochs
            # from the start (a conversion of a non-empty one keeps them).
            self.max_group_epoch = self.max_epoch_handed_out = 0
            self._coordinator_epochs, self.converted_at_epoch, self.converted_generation = {}, None, None
        elif converted:
            self.converted_at_epoch = group.group_epoch
            self.converted_generation = next(r.epoch for r in records if isinstance(r, GroupEpochRecord))
        self._classic_was_empty = False
        epoch = group.group_epoch
        if epoch < self.max_group_epoch:
            self.violation("group-epoch", f"group epoch went back from {self.max_group_epoch} to {epoch}")
        self.max_group_epoch = max(self.max_group_epoch, epoch)
        self.max_epoch_handed_out = max(self.max_epoch_handed_out, epoch)
        if not records:
            return
        if group.assignment_epoch > epoch:
            self.violation(
                "assignment-epoch", f"assignment epoch {group.assignment_epoch} > group epoch {epoch}"
            )
        epochs: dict[str, int] = {}
        owners: dict[Key, str] = {}
        for member_id, member in group.members.items():
            member_epoch = member.member_epoch
            if member_epoch > epoch:
                self.violation(
                    "member-epoch", f"member {member_id} epoch {member_epoch} > group epoch {epoch}"
                )
            before = self._coordinator_epochs.get(member_id)
            if before is not None and before >= 0 and 0 <= member_epoch < before:
                self.violation(
                    "member-epoch", f"member {member_id} epoch went back from {before} to {member_epoch}"
                )
            epochs[member_id] = member_epoch
            current = member.current
            for holding in (current.assigned, current.pending_revocation):
                for topic_id, partitions in holding.items():
                    for partition in partitions:
                        key = (topic_id, partition)
                        other = owners.get(key)
                        if other is not None and other != member_id:
                            self.violation(
                                "coordinator-double-owner",
                                f"{self._label(key)} held by {other} and {member_id} on the coordinator",
                            )
                        owners[key] = member_id
        self._coordinator_epochs = epochs
        self._offsets_written(records, kind, sender)

    def _after_classic_step(self, records: list[Record], kind: str, sender: str) -> None:
        """The group is classic (or gone): its members and generation; who owns a partition is
        the members' business (`CoordinatorHost.tracks_ownership`), checked on the client side."""
        classic = self.host.classic_group()
        if classic is None:
            return
        self._classic_was_empty = not classic.members
        durable = self.host.last.state.classic_durable.get(GROUP)
        if (
            durable is not None
            and durable.generation == 0
            and any(isinstance(record, ConsumerGroupTombstone) for record in records)
        ):
            # An empty consumer group deleted for a classic join: a new group, epochs from 0 (a
            # conversion keeps the group epoch as the generation).
            self.max_group_epoch = self.max_epoch_handed_out = 0
        self.members = frozenset(classic.members)
        self._classic_generation = classic.generation
        # Only a stored generation is kept by a coordinator taking over (one whose rebalance got
        # no further than JoinGroup is never stored, and may be handed out again).
        generation = 0 if durable is None else durable.generation
        if generation < self.max_group_epoch:
            self.violation("group-epoch", f"generation {generation} after group epoch {self.max_group_epoch}")
        self.max_group_epoch = max(self.max_group_epoch, generation)
        self.max_epoch_handed_out = max(self.max_epoch_handed_out, generation, classic.generation)
        self._offsets_written(records, kind, sender)

    def _offsets_written(self, records: list[Record], kind: str, sender: str) -> None:
        offsets_changed = False
        for record in records:
            if isinstance(record, OffsetCommitRecord):
                self._committed(record, sender, kind)
                offsets_changed = True
            elif isinstance(record, OffsetTombstone):
                self._offset_deleted(record)
                offsets_changed = True
        if offsets_changed:
            self._check_stored_offsets(self.host.last)
        self._check_views()

    def _committed(self, record: OffsetCommitRecord, sender: str, kind: str) -> None:
        value = record.value
        key = (value.topic_id, record.partition)
        label = self._label(key)
        owner = self.host.owner_of(key)
        by_owner = kind == "txn-end" or not self.host.tracks_ownership or owner == sender
        if kind not in ("commit", "txn-end") or not by_owner:
            # A transaction's offsets are checked when they are accepted, pending (its marker
            # completes them later, when the partition may have moved on: `exactly_once`).
            self.violation(
                "commit-by-non-owner",
                f"{sender or kind} committed {label}={value.offset}; its holder is {owner}",
            )
        before = self.committed.get(key)
        if before is not None and value.offset < before:
            self.violation(
                "commit-regressed", f"{label} committed {value.offset} after {before} (by {sender})"
            )
        coverage = self.coverage.get(key)
        processed = coverage.prefix if coverage is not None else 0
        if value.offset > processed:
            self.violation(
                "commit-ahead", f"{label} committed {value.offset} but only [0, {processed}) was processed"
            )
        self.committed[key] = value.offset

    def _offset_deleted(self, record: OffsetTombstone) -> None:
        doomed = [
            key
            for key in self.committed
            if key[1] == record.partition
            and self.topics.name_of(key[0]) == record.topic
            and key[0] in self.topics.deleted
        ]
        live = self.topics.live.get(record.topic)
        if not doomed and live is not None and (live.topic_id, record.partition) in self.committed:
            self.violation(
                "offset-deleted",
                f"the offset of live {self._label((live.topic_id, record.partition))} was deleted",
            )
        for key in doomed:
            del self.committed[key]

    def _check_stored_offsets(
        self, coordinator: GroupCoordinator, records: list[Record] | None = None
    ) -> None:
        """The coordinator stores exactly the accepted offsets (of `records`' partitions, or all)."""
        stored = coordinator.state.offsets.get(GROUP, {})
        keys = self.committed
        if records is not None:
            keys = {
                key: self.committed[key]
                for record in records
                if isinstance(record, OffsetCommitRecord)
                and (key := (record.value.topic_id, record.partition)) in self.committed
            }
        for key, offset in keys.items():
            if not self.topics.is_live(key[0]):
                continue
            value = stored.get((self.topics.name_of(key[0]), key[1]))
            if value is None or value.topic_id != key[0] or value.offset != offset:
                got = None if value is None else value.offset
                self.violation("offset-lost", f"{self._label(key)}: accepted {offset}, stored {got}")

    def after_failover(self, old: GroupCoordinator, new: GroupCoordinator) -> None:
        """A new coordinator replayed the old one's log: same durable state."""
        if old.state.snapshot() != new.state.snapshot():
            self.violation("failover-state", "the replayed coordinator state differs from the old one")
        self._check_stored_offsets(new)
        # The new coordinator knows the group as stored: a classic group whose only members were
        # joining (never stored) is empty there, and a consumer-protocol join deletes it.
        classic = new.state.classic_groups.get(GROUP)
        self._classic_was_empty = classic is not None and not classic.members

    def _check_views(self) -> None:
        for kind, view in (("fetch", self.fetchers), ("hold", self.holders)):
            for key, procs in view.items():
                for proc in procs:
                    if not self._exempt(proc, key) and self._coordinator_disowns(proc, key):
                        self.violation(
                            f"{kind}-not-owner",
                            f"{proc.label} ({proc.group_member_id[:6]}) {_VERB[kind]} {self._label(key)} but "
                            f"the coordinator gives it to {self.host.owner_of(key)}",
                        )
        self._track_zombies()

    def _coordinator_disowns(self, proc: SimMember, key: Key) -> bool:
        """Whether the coordinator, while it tracks ownership (a consumer group), gives `key` to
        another member than `proc` (or to nobody); partitions a classic member cannot be mapped
        to any more (`_unmappable`) excepted."""
        return (
            self.host.tracks_ownership
            and not self._unmappable(proc, key)
            and self.host.owner_of(key) != proc.group_member_id
        )

    def _track_zombies(self) -> None:
        now = self.sched.now
        for proc in self.world.processes():
            label = proc.label
            if proc.app.fetching and self._zombie(proc):
                if label not in self._zombie_since:
                    self._zombie_since[label] = now
                    self.zombies.episodes += 1
                    self.world.trace.log(now, label, "zombie: removed from the group while fetching")
            elif label in self._zombie_since:
                self._end_zombie(label)

    def _end_zombie(self, label: str) -> None:
        since = self._zombie_since.pop(label, None)
        if since is not None:
            took = self.sched.now - since
            self.zombies.fetch_ms += took
            self.zombies.longest_ms = max(self.zombies.longest_ms, took)

    @property
    def zombies_now(self) -> list[str]:
        """Labels of the processes that are zombies right now."""
        return sorted(self._zombie_since)

    # -- member steps --------------------------------------------------------------------------------

    def after_member_step(
        self, proc: SimMember, before: MemberState, owned_before: frozenset[Key], effects: list[Effect]
    ) -> None:
        """The core handled an event and returned `effects`."""
        core = proc.core
        epoch = core.member_epoch
        label = proc.label
        self._check_commit_answers(proc)
        if (late := late_heartbeat(proc)) is not None:
            self.violation("heartbeat-late", late)
        if epoch > 0:
            last = self._client_epochs.get(label, 0)
            if epoch < last:
                self.violation("client-epoch", f"{label} epoch went back from {last} to {epoch}")
            # With classic members an emptied consumer group is deleted when a classic member
            # joins, and started again from generation 0: a member the group forgot keeps the
            # old group's epoch until the coordinator tells it.
            recreated = bool(self.world.classic_slots) and self._zombie(proc)
            if epoch > self.max_epoch_handed_out and not recreated:
                handed_out = self.max_epoch_handed_out
                self.violation("client-epoch", f"{label} epoch {epoch} > group epoch {handed_out}")
            self._client_epochs[label] = epoch
        else:
            self._client_epochs[label] = 0
        if epoch > 0:  # (a member out of the group sends what it has: the coordinator decides)
            self._check_commit_epochs(proc, epoch, effects)
        after = core.state
        if after in _LOSING or (before in IN_GROUP and after is MemberState.LEAVING):
            # Declared lost (fenced, poll timer expired, fatal): the stop and on_partitions_lost are
            # queued behind whatever the application is doing; others may already have them.
            lost = set(owned_before)
            for effect in effects:
                if isinstance(effect, (StopFetching, InvokeCallback)):
                    lost.update(tp.key for tp in effect.partitions)
            app = proc.app
            queued = _queued_acquisitions(app.queue)
            # Only what the application has, or will still (stale) acquire, needs the exemption: it
            # ends when the application drops the partition (its queued stop / on_partitions_lost).
            lost = {key for key in lost if key in app.fetching or key in app.holds or key in queued}
            if lost:
                self._lost.setdefault(label, set()).update(lost)
            return
        if not owned_before:
            return
        released = owned_before - {tp.key for tp in core.reconciler.owned}
        if not released:
            return
        app = proc.app
        # Only a member staying in the group acknowledges a revocation (one fenced meanwhile lost
        # the partitions; a leave gives them up after its own commit of them, which it waits for).
        acknowledges = epoch > 0 and after in IN_GROUP
        committing = core.commits.under_way(CommitReason.REVOCATION) if acknowledges else frozenset()
        for key in sorted(released, key=lambda k: (k[0].bytes, k[1])):
            if key in committing:
                self.violation(
                    "released-before-commit",
                    f"{label} gave up {self._label(key)} before its revocation commit finished",
                )
            if key in app.fetching:
                self.violation(
                    "released-while-fetching",
                    f"{label} gave up {self._label(key)} before its application stopped fetching it",
                )
            elif key in app.holds:
                self.violation(
                    "released-while-holding",
                    f"{label} gave up {self._label(key)} before its application's "
                    "on_partitions_revoked returned",
                )

    def _check_commit_answers(self, proc: SimMember) -> None:
        """The application core keeps a commit's answer only while a synchronous caller waits
        for it (anything else would grow with every commit for as long as the consumer runs)."""
        state = proc.app.core.state
        kept = {(proc.label, token) for token in state.commits if token not in state.awaited_commits}
        new = kept - self._kept_answers
        if new:
            self._kept_answers |= new
            tokens = sorted(token for _label, token in new)
            self.violation("commit-answer-kept", f"{proc.label} kept the answers of commits {tokens}")

    def _check_commit_epochs(self, proc: SimMember, epoch: int, effects: list[Effect]) -> None:
        """An OffsetCommit of partitions the member owns carries its epoch of the moment it is sent."""
        for effect in effects:
            request = effect.request if isinstance(effect, SendRequest) else None
            if not isinstance(request, OffsetCommitRequest) or request.generation_id_or_member_epoch == epoch:
                continue
            owned = {tp.key for tp in proc.core.reconciler.owned}  # only for a commit that differs
            if all((t.topic_id, p.partition_index) in owned for t in request.topics for p in t.partitions):
                sent = request.generation_id_or_member_epoch
                self.violation("commit-epoch", f"{proc.label} committed with epoch {sent} in epoch {epoch}")

    def _exempt(self, proc: SimMember, key: Key) -> bool:
        """Zombies, and partitions their core declared lost that the application has not dropped yet."""
        if self._zombie(proc):
            return True
        lost = self._lost.get(proc.label)
        return lost is not None and key in lost

    def _unmappable(self, proc: SimMember, key: Key) -> bool:
        """A classic member reports what it owns by topic name: the coordinator cannot map a
        deleted topic's partitions to it any more (and nobody else can get them: a topic created
        again under the name has a new id)."""
        return proc.classic is not None and not self.topics.is_live(key[0])

    def after_zombie_heartbeat(self, proc: SimMember) -> None:
        """The core handled a heartbeat response produced while it was not in the group: every
        partition its application still fetches must have a stop queued ahead of any record."""
        if not proc.alive:
            return
        app = proc.app
        stopping = {tp.key for work in app.queue if isinstance(work, StopFetching) for tp in work.partitions}
        left = [key for key in app.fetching if key not in stopping]
        if left:
            self.violation(
                "zombie-not-stopped",
                f"{proc.label} still fetches {len(left)} partitions with no stop queued after the "
                "coordinator told it it is not a member",
            )

    # -- application steps ---------------------------------------------------------------------------

    def started(self, proc: SimMember, key: Key) -> None:
        """`proc` started fetching `key`."""
        self._acquire(proc, key, self.fetchers, "fetch")

    def held(self, proc: SimMember, keys: tuple[Key, ...]) -> None:
        """`proc`'s application now holds `keys` (on_partitions_assigned, or fetching)."""
        for key in keys:
            self._acquire(proc, key, self.holders, "hold")

    def _acquire(self, proc: SimMember, key: Key, view: dict[Key, set[SimMember]], kind: str) -> None:
        procs = view.setdefault(key, set())
        procs.add(proc)
        if self._exempt(proc, key):
            return
        others = sorted(p.label for p in procs if p is not proc and not self._exempt(p, key))
        if others:
            self.violation(
                f"double-{kind}", f"{proc.label} {_VERB[kind]} {self._label(key)} while {others} still do"
            )
        if self._coordinator_disowns(proc, key):
            self.violation(
                f"{kind}-not-owner",
                f"{proc.label} ({proc.group_member_id[:6]}) starts to {kind} {self._label(key)} but "
                f"the coordinator gives it to {self.host.owner_of(key)}",
            )

    def stopped(self, proc: SimMember, key: Key) -> None:
        """`proc` stopped fetching `key`."""
        procs = self.fetchers.get(key)
        if procs is not None:
            procs.discard(proc)
        self._forget_lost(proc, key)
        if not proc.app.fetching:
            self._end_zombie(proc.label)

    def released(self, proc: SimMember, keys: tuple[Key, ...]) -> None:
        """`proc`'s application no longer holds `keys`."""
        for key in keys:
            procs = self.holders.get(key)
            if procs is not None:
                procs.discard(proc)
            self._forget_lost(proc, key)

    def _forget_lost(self, proc: SimMember, key: Key) -> None:
        lost = self._lost.get(proc.label)
        if lost is not None and key not in proc.app.fetching and key not in proc.app.holds:
            lost.discard(key)

    def processed(self, proc: SimMember, key: Key, start: int, end: int) -> None:
        """`proc`'s application processed the records [start, end) of `key`."""
        if not any(tp.key == key for tp in proc.core.reconciler.owned):
            self.violation(
                "process-not-owned",
                f"{proc.label} processed {self._label(key)} [{start}, {end}) its core does not own",
            )
        self.records_processed += end - start
        if self._zombie(proc):
            self.zombies.records += end - start
        coverage = self.coverage.get(key)
        if coverage is None:
            coverage = self.coverage[key] = Coverage()
        coverage.add(start, end)

    def closed(self, proc: SimMember) -> None:
        """`proc` finished closing."""
        if proc.app.fetching or proc.app.holds:
            self.violation(
                "closed-holding",
                f"{proc.label} closed while fetching {len(proc.app.fetching)} "
                f"/ holding {len(proc.app.holds)}",
            )

    def process_gone(self, proc: SimMember) -> None:
        """`proc` ended: it fetches and holds nothing."""
        for view in (self.fetchers, self.holders):
            for procs in view.values():
                procs.discard(proc)
        self._end_zombie(proc.label)
        self._client_epochs.pop(proc.label, None)
        self._lost.pop(proc.label, None)


def _queued_acquisitions(queue: Iterable[Effect]) -> set[Key]:
    """Partitions that queued application work will start fetching or announce as assigned."""
    keys: set[Key] = set()
    for work in queue:
        if isinstance(work, StartFetching):
            keys.update(position.partition.key for position in work.positions)
        elif isinstance(work, InvokeCallback) and work.kind is CallbackKind.ASSIGNED:
            keys.update(tp.key for tp in work.partitions)
    return keys
