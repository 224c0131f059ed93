"""Offset commits and committed-offset fetches: when to send them and what to do with their errors.

Every OffsetCommit and OffsetFetch carries the member id and the member epoch current when it is
sent. A commit is a logical operation (`commit_id`) that may take several
attempts (`request_id` each); its partitions are filtered against the owned set **at every send**,
so the offsets of a partition the member no longer owns are never committed.

Retry rules, by `CommitReason`:

=============  =================  ==========================  ========================
reason         retriable error    STALE_MEMBER_EPOCH          deadline
=============  =================  ==========================  ========================
AUTO           next auto-commit   once, after the next         none (next interval)
               after the backoff  successful heartbeat
REVOCATION     backoff, retry     retry after each heartbeat   now + rebalance timeout
CLOSE          backoff, retry     retry after each heartbeat   Close.deadline_ms
USER_SYNC      backoff, retry     3 times, then fails          CommitRequested.deadline_ms
USER_ASYNC     fails              fails                        --
=============  =================  ==========================  ========================

"After the next successful heartbeat" means: at once if the member epoch already changed since the
attempt was sent, otherwise when the next heartbeat response arrives (it carries the current epoch).
UNKNOWN_MEMBER_ID and FENCED_MEMBER_EPOCH fail the commit: the heartbeat will fence the member.
UNKNOWN_TOPIC_ID and UNKNOWN_TOPIC_OR_PARTITION fail it too (a deleted topic: retrying cannot help).
NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and transport failures also ask for a new coordinator.

Committed-offset fetches (for newly assigned partitions) follow the same epoch rule (the epoch must
equal the member's) and retry every other error with backoff until the reconciliation
that asked for them ends (a fence cancels them); non-retriable errors are also reported. A fetch
whose only errors are UNKNOWN_TOPIC_ID / UNKNOWN_TOPIC_OR_PARTITION is done: those partitions are
marked `TOPIC_GONE_OFFSET` (their topic was deleted) and are not fetched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...errors import ErrorCode, KConsumerError, StaleMemberEpochError, error_for
from ...protocol.uuid import Uuid
from .backoff import ExponentialBackoff, Retry
from .effects import (
    CommitFinished,
    CommitOffsets,
    Effect,
    FetchCommittedOffsets,
    FindCoordinator,
    ReportError,
)
from .errors import COORDINATOR_ERRORS, CommitFailedError
from .events import CommitRequested, CommitResult, OffsetFetchResult
from .model import (
    TOPIC_GONE_OFFSET,
    CommitReason,
    Ids,
    MemberConfig,
    PartitionOffset,
    TopicIdPartition,
    sort_partitions,
)
from .offset_requests import TOPIC_GONE as _TOPIC_GONE

#: STALE_MEMBER_EPOCH retries of a synchronous user commit before it fails.
USER_SYNC_STALE_RETRIES = 3
#: -1: retried on stale epochs until the deadline.
UNBOUNDED = -1

AUTOMATIC = frozenset({CommitReason.AUTO, CommitReason.REVOCATION, CommitReason.CLOSE})


@dataclass
class CommitOutput:
    """What a `CommitManager` call produced: effects to emit, the ids of the commits that ended,
    and the offset fetch that ended (its id and the committed offsets by partition key)."""

    effects: list[Effect] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)
    fetched: tuple[int, Mapping[tuple[Uuid, int], PartitionOffset]] | None = None
    started: int | None = None
    """For `commit`: the id of the commit started, or None when it ended at once."""


@dataclass(frozen=True)
class Membership:
    """What a request needs from the member at the time it is sent."""

    member_id: str
    member_epoch: int
    owned: frozenset[TopicIdPartition]
    #: Owned partitions a revoke step already stopped: commits of "every owned partition" leave
    #: them out (the application may read their positions only after the revocation was
    #: acknowledged; their revocation commit is the one that counts).
    revoking: frozenset[TopicIdPartition] = frozenset()


@dataclass
class _Commit:
    commit_id: int
    reason: CommitReason
    token: int | None
    partitions: tuple[TopicIdPartition, ...] | None  # None: every owned partition at send time
    offsets: dict[tuple[Uuid, int], PartitionOffset] | None
    deadline_ms: int | None
    stale_retries_left: int
    retry: Retry
    request_id: int | None = None
    sent_epoch: int = 0
    sent: tuple[TopicIdPartition, ...] = ()
    not_before: int | None = None
    waiting_heartbeat: bool = False
    skipped: set[TopicIdPartition] = field(default_factory=set)
    last_error: KConsumerError | None = None
    #: The member lost its partitions while this attempt was in flight: it is not retried (a retry
    #: after rejoining could commit these old offsets over newer ones of the same partitions).
    lost: bool = False


@dataclass
class _Fetch:
    fetch_id: int
    partitions: tuple[TopicIdPartition, ...]
    retry: Retry
    request_id: int | None = None
    sent_epoch: int = 0
    not_before: int | None = None
    waiting_heartbeat: bool = False
    #: Not sent yet: a commit of some of its partitions is under way (see `fetch`).
    waiting_commits: bool = False


class CommitManager:
    """Auto-commit timer, commit operations and committed-offset fetches of one member.

    Every public method returns a `CommitOutput`; the manager never emits anything itself."""

    def __init__(self, config: MemberConfig, backoff: ExponentialBackoff, ids: Ids, now_ms: int) -> None:
        self._config = config
        self._backoff = backoff
        self._ids = ids
        self._commits: dict[int, _Commit] = {}
        self._fetches: dict[int, _Fetch] = {}
        self._next_auto_ms = now_ms + config.auto_commit_interval_ms

    def under_way(self, reason: CommitReason) -> frozenset[tuple[Uuid, int]]:
        """The partitions of the commits of `reason` not finished yet (for tests and observability)."""
        return frozenset(
            tp.key for op in self._commits.values() if op.reason is reason for tp in op.partitions or op.sent
        )

    # -- commits -------------------------------------------------------------------------------

    def commit(
        self,
        reason: CommitReason,
        now_ms: int,
        member: Membership,
        *,
        partitions: Iterable[TopicIdPartition] | None = None,
        offsets: Iterable[PartitionOffset] | None = None,
        token: int | None = None,
        deadline_ms: int | None = None,
    ) -> CommitOutput:
        """Start a commit; `started` is its id, or None when it finished at once (nothing to commit).

        `offsets` are explicit offsets; otherwise the current positions of `partitions` (every owned
        partition, at each send, when None).
        """
        out = CommitOutput()
        out.started = self._start(reason, now_ms, member, out, partitions, offsets, token, deadline_ms)
        return out

    def _start(
        self,
        reason: CommitReason,
        now_ms: int,
        member: Membership,
        out: CommitOutput,
        partitions: Iterable[TopicIdPartition] | None,
        offsets: Iterable[PartitionOffset] | None,
        token: int | None,
        deadline_ms: int | None,
    ) -> int | None:
        if reason in (CommitReason.REVOCATION, CommitReason.CLOSE) and deadline_ms is None:
            deadline_ms = now_ms + self._config.rebalance_timeout_ms
        elif reason is CommitReason.USER_SYNC and deadline_ms is None:
            deadline_ms = now_ms + self._config.default_api_timeout_ms
        stale_retries = {
            CommitReason.AUTO: 1,
            CommitReason.USER_SYNC: USER_SYNC_STALE_RETRIES,
            CommitReason.USER_ASYNC: 0,
        }.get(reason, UNBOUNDED)
        by_key = None if offsets is None else {o.partition.key: o for o in offsets}
        if by_key is not None:
            partitions = [o.partition for o in by_key.values()]
        op = _Commit(
            commit_id=self._ids.next(),
            reason=reason,
            token=token,
            partitions=None if partitions is None else sort_partitions(partitions),
            offsets=by_key,
            deadline_ms=deadline_ms,
            stale_retries_left=stale_retries,
            retry=Retry(self._backoff),
        )
        self._commits[op.commit_id] = op
        self._send(op, member, out)
        return op.commit_id if op.commit_id in self._commits else None

    def _send(self, op: _Commit, member: Membership, out: CommitOutput) -> None:
        owned_keys = {tp.key for tp in member.owned}
        wanted = member.owned - member.revoking if op.partitions is None else op.partitions
        keep = sort_partitions(tp for tp in wanted if tp.key in owned_keys)
        op.skipped.update(tp for tp in wanted if tp.key not in owned_keys)
        op.not_before = None
        op.waiting_heartbeat = False
        if not keep:
            error = None
            if op.skipped and op.reason not in AUTOMATIC:
                names = ", ".join(str(tp) for tp in sort_partitions(op.skipped))
                error = CommitFailedError(f"not committed: partitions not assigned to this member: {names}")
            self._finish(op, error, out)
            return
        op.request_id = self._ids.next()
        op.sent_epoch = member.member_epoch
        op.sent = keep
        offsets = None
        if op.offsets is not None:
            offsets = tuple(op.offsets[tp.key] for tp in keep)
        out.effects.append(
            CommitOffsets(
                request_id=op.request_id,
                reason=op.reason,
                member_id=member.member_id,
                member_epoch=member.member_epoch,
                partitions=keep,
                offsets=offsets,
            )
        )

    def _finish(self, op: _Commit, error: KConsumerError | None, out: CommitOutput) -> None:
        del self._commits[op.commit_id]
        out.finished.append(op.commit_id)
        for fetch in self._fetches.values():
            if fetch.waiting_commits and not self._committing(fetch.partitions):
                fetch.waiting_commits, fetch.not_before = False, 0  # sent by the next `timers`
        if op.reason in AUTOMATIC and op.request_id is None:
            return  # nothing was sent: nothing to tell
        skipped = sort_partitions(op.skipped)
        if error is None and skipped and op.reason not in AUTOMATIC:
            names = ", ".join(str(tp) for tp in skipped)
            error = CommitFailedError(
                f"partitions no longer assigned to this member were not committed: {names}"
            )
        out.effects.append(
            CommitFinished(
                commit_id=op.commit_id,
                reason=op.reason,
                token=op.token,
                request_id=op.request_id,
                partitions=op.sent,
                skipped=skipped,
                error=error,
            )
        )

    def handle(
        self,
        event: CommitRequested | CommitResult | OffsetFetchResult,
        now_ms: int,
        member: Membership,
        fatal: KConsumerError | None,
    ) -> CommitOutput:
        """A commit request of the application, or the outcome of an OffsetCommit or OffsetFetch."""
        if isinstance(event, CommitRequested):
            return self.on_commit_requested(event, now_ms, member, fatal)
        if isinstance(event, CommitResult):
            return self.on_commit_result(event, now_ms, member)
        return self.on_fetch_result(event, now_ms, member)

    def on_commit_requested(
        self, event: CommitRequested, now_ms: int, member: Membership, fatal: KConsumerError | None
    ) -> CommitOutput:
        """The application commits: explicit offsets, or the positions of every owned partition
        not being revoked. A FATAL member (`fatal`) answers at once with its error."""
        reason = CommitReason.USER_SYNC if event.sync else CommitReason.USER_ASYNC
        if fatal is not None:
            out = CommitOutput()
            out.effects.append(CommitFinished(self._ids.next(), reason, event.token, None, (), error=fatal))
            return out
        return self.commit(
            reason,
            now_ms,
            member,
            partitions=member.owned - member.revoking if event.offsets is None else None,
            offsets=event.offsets,
            token=event.token,
            deadline_ms=event.deadline_ms,
        )

    def on_commit_result(self, result: CommitResult, now_ms: int, member: Membership) -> CommitOutput:
        """Handle an OffsetCommit outcome."""
        out = CommitOutput()
        op = next((c for c in self._commits.values() if c.request_id == result.request_id), None)
        if op is None or op.not_before is not None or op.waiting_heartbeat:
            return out  # unknown, or an answer to an attempt already given up
        code = result.error
        if code is ErrorCode.NONE:
            self._finish(op, None, out)
            return out
        error = error_for(code, result.message)
        op.last_error = error
        if op.lost:
            self._finish(op, CommitFailedError("partitions lost while the commit was in flight", error), out)
            return out
        if code in COORDINATOR_ERRORS:
            out.effects.append(FindCoordinator(f"OffsetCommit failed with {code.name}"))
        expired = op.deadline_ms is not None and now_ms >= op.deadline_ms
        if code is ErrorCode.STALE_MEMBER_EPOCH and op.stale_retries_left != 0 and not expired:
            if op.stale_retries_left > 0:
                op.stale_retries_left -= 1
            if member.member_epoch != op.sent_epoch:
                self._send(op, member, out)
            else:
                op.waiting_heartbeat = True
            return out
        retriable = (code.retriable or code in COORDINATOR_ERRORS) and code not in _TOPIC_GONE
        if retriable and op.reason is CommitReason.AUTO:
            self._next_auto_ms = min(self._next_auto_ms, op.retry.failed(now_ms))
        elif retriable and op.reason is not CommitReason.USER_ASYNC and not expired:
            op.not_before = op.retry.failed(now_ms)
            return out
        self._finish(op, self._failure(op, error, expired), out)
        return out

    @staticmethod
    def _failure(op: _Commit, error: KConsumerError, expired: bool) -> KConsumerError:
        if expired:
            return CommitFailedError("commit gave up at its deadline", error)
        if isinstance(error, StaleMemberEpochError) and op.reason is CommitReason.USER_SYNC:
            return CommitFailedError("commit failed with a stale member epoch after retrying", error)
        return error

    # -- committed-offset fetches --------------------------------------------------------------

    def fetch(self, partitions: Iterable[TopicIdPartition], member: Membership) -> CommitOutput:
        """Start fetching the committed offsets of `partitions`; `started` is the fetch id."""
        out = CommitOutput()
        op = _Fetch(
            fetch_id=self._ids.next(), partitions=sort_partitions(partitions), retry=Retry(self._backoff)
        )
        self._fetches[op.fetch_id] = op
        if self._committing(op.partitions):
            # A commit of these partitions still under way (say, a user commit retried across a
            # rebalance that took them away and gave them back) would land after the fetch: the
            # member would start from the older offset and later commit it over the newer one.
            op.waiting_commits = True
        else:
            self._send_fetch(op, member, out)
        out.started = op.fetch_id
        return out

    def _committing(self, partitions: Iterable[TopicIdPartition]) -> bool:
        """Whether a commit not finished yet covers any of `partitions`."""
        keys = {tp.key for tp in partitions}
        for op in self._commits.values():
            if op.offsets is not None:
                covered: set[tuple[Uuid, int]] | None = set(op.offsets)
            elif op.sent:
                covered = {tp.key for tp in op.sent}
            elif op.partitions is not None:
                covered = {tp.key for tp in op.partitions}
            else:
                covered = None  # every owned partition
            if covered is None or keys & covered:
                return True
        return False

    def _send_fetch(self, op: _Fetch, member: Membership, out: CommitOutput) -> None:
        op.request_id = self._ids.next()
        op.sent_epoch = member.member_epoch
        op.not_before = None
        op.waiting_heartbeat = False
        out.effects.append(
            FetchCommittedOffsets(
                request_id=op.request_id,
                member_id=member.member_id,
                member_epoch=member.member_epoch,
                partitions=op.partitions,
            )
        )

    def cancel_fetch(self, fetch_id: int) -> None:
        """Forget a fetch (its reconciliation ended); a late answer is ignored."""
        self._fetches.pop(fetch_id, None)

    def on_fetch_result(self, result: OffsetFetchResult, now_ms: int, member: Membership) -> CommitOutput:
        """Handle an OffsetFetch outcome; `fetched` is set once the fetch is done."""
        out = CommitOutput()
        op = next((f for f in self._fetches.values() if f.request_id == result.request_id), None)
        if op is None or op.not_before is not None or op.waiting_heartbeat:
            return out
        code = result.error
        if code is ErrorCode.NONE or code in _TOPIC_GONE:
            # A partition of a deleted topic has nothing to fetch, ever: retrying would hold the
            # reconciliation (and so the member's next assignment) forever. It is marked gone.
            del self._fetches[op.fetch_id]
            gone = {tp.key: PartitionOffset(tp, TOPIC_GONE_OFFSET) for tp in result.gone}
            out.fetched = (op.fetch_id, {**gone, **{o.partition.key: o for o in result.offsets}})
            return out
        if code in COORDINATOR_ERRORS:
            out.effects.append(FindCoordinator(f"OffsetFetch failed with {code.name}"))
        if code is ErrorCode.STALE_MEMBER_EPOCH:
            if member.member_epoch != op.sent_epoch:
                self._send_fetch(op, member, out)
            else:
                op.waiting_heartbeat = True
            return out
        if not (code.retriable or code in COORDINATOR_ERRORS or code in _FENCING):
            out.effects.append(ReportError(error_for(code, result.message), fatal=False))
        op.not_before = op.retry.failed(now_ms)
        return out

    # -- shared ---------------------------------------------------------------------------------

    def on_heartbeat_success(self, member: Membership) -> CommitOutput:
        """A heartbeat succeeded: resend what waited for the current epoch."""
        out = CommitOutput()
        for op in [c for c in self._commits.values() if c.waiting_heartbeat]:
            self._send(op, member, out)
        for fetch in [f for f in self._fetches.values() if f.waiting_heartbeat]:
            self._send_fetch(fetch, member, out)
        return out

    def on_ownership_lost(self, member: Membership) -> CommitOutput:
        """The member lost partitions without revoking them (fenced, stale, fatal): automatic
        commits waiting to retry are dropped, user ones are re-filtered (and fail if nothing is left);
        commits in flight finish with their answer, without retries."""
        out = CommitOutput()
        for op in list(self._commits.values()):
            if op.request_id is not None and not (op.waiting_heartbeat or op.not_before is not None):
                op.lost = True  # in flight: its answer decides, and a failure is final
                continue
            if op.reason in AUTOMATIC:
                self._finish(op, CommitFailedError("partitions lost before the commit was sent"), out)
            else:
                self._send(op, member, out)
        return out

    def timers(self, now_ms: int, member: Membership, in_group: bool) -> CommitOutput:
        """Run what is due at `now_ms`: retries whose backoff ended, deadlines, the auto-commit."""
        out = CommitOutput()
        for op in list(self._commits.values()):
            if (
                op.deadline_ms is not None
                and now_ms >= op.deadline_ms
                and (op.waiting_heartbeat or op.not_before is not None)
            ):
                self._finish(op, CommitFailedError("commit gave up at its deadline", op.last_error), out)
            elif op.not_before is not None and now_ms >= op.not_before:
                self._send(op, member, out)
        for fetch in list(self._fetches.values()):
            if fetch.not_before is not None and now_ms >= fetch.not_before:
                self._send_fetch(fetch, member, out)
        if not self._config.auto_commit:
            return out
        interval = self._config.auto_commit_interval_ms
        if not (in_group and member.owned):
            # Nothing to commit: the interval starts when the member gets partitions.
            self._next_auto_ms = max(self._next_auto_ms, now_ms + interval)
        elif now_ms >= self._next_auto_ms:
            self._next_auto_ms = now_ms + interval
            if not any(c.reason is CommitReason.AUTO for c in self._commits.values()):
                self._start(CommitReason.AUTO, now_ms, member, out, None, None, None, None)
        return out

    def next_deadline(self, member: Membership, in_group: bool) -> int | None:
        """The earliest time `timers` has something to do, or None."""
        times: list[int] = []
        for op in self._commits.values():
            if op.not_before is not None:
                times.append(op.not_before)
            if op.deadline_ms is not None and (op.waiting_heartbeat or op.not_before is not None):
                times.append(op.deadline_ms)
        times.extend(f.not_before for f in self._fetches.values() if f.not_before is not None)
        if self._config.auto_commit and in_group and member.owned:
            times.append(self._next_auto_ms)
        return min(times) if times else None


_FENCING = frozenset({ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH})
