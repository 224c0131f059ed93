"""The driver side of a streaming query: its consumer group member, and the admin client it plans
with.

`DriverMember` wraps a membership-only kconsumer `Consumer` (``fetch=False``): it joins the group,
reconciles and commits, and never fetches a record (executors read the planned ranges). It lives in
the process that runs the stream reader's driver-side methods, in `MEMBERS`, keyed by the reader's
identity: a reader pickled to an executor carries only its options and its id, never the member.

Rebalances happen only where the stream reader calls `boundary()` (``poll(0)``), which it does
at batch boundaries only; there, and nowhere else, the rebalance callbacks run:

- revoked partitions: the final offsets of the last *completed* batch are committed to the group
  (synchronously, with this member's id and epoch) before the callback returns, and so before
  the revocation is acknowledged to the coordinator;
- lost partitions (fenced): forgotten, nothing committed;
- assigned partitions: remembered as *fresh*; their range starts where the group's committed
  offset says (or ``startingOffsets`` when there is none).
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from ..client.consumer import Consumer
from ..client.subscription import SubscriptionPattern
from .cluster import ADMIN_TIMEOUT_S, Cluster
from .offsets import SourceOffset
from .options import EARLIEST, LATEST, Key, SourceOptions

log = logging.getLogger("kconsumer.spark")

#: Longest time leaving the group may take when the query stops.
CLOSE_TIMEOUT_S = 10.0


class DriverMember:
    """A streaming query's group member and planning helpers (see the module docstring)."""

    def __init__(self, options: SourceOptions) -> None:
        self._options = options
        self._group = options.group_id
        #: End offsets of the last completed batch, per owned partition.
        self.completed: dict[Key, int] = {}
        #: What this member last committed to the group, per owned partition.
        self.committed: dict[Key, int] = {}
        #: Partitions assigned since they were last planned: None until their start is resolved.
        self.fresh: dict[Key, int | None] = {}
        self.assignments = 0
        self.revocations = 0
        self._assigned_once = False
        self.cluster = Cluster(options)
        self._consumer = Consumer(options.member_config(), fetch=False)
        subscription: list[str] | SubscriptionPattern = (
            SubscriptionPattern(options.pattern) if options.pattern is not None else list(options.topics)
        )
        self._consumer.subscribe(
            subscription, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )

    @property
    def consumer(self) -> Consumer:
        """The membership-only consumer (for its member id, epoch, committed offsets)."""
        return self._consumer

    # -- the group ---------------------------------------------------------------------------------

    def boundary(self) -> None:
        """A batch boundary: run the rebalance callbacks that are due (``poll(0)``)."""
        try:
            event = self._consumer.poll(0)
            error = None if event is None else event.error()
            if error is not None:  # an error event, e.g. a poll-interval overrun
                log.warning("kconsumer: group member error: %s", error.str())
        except KafkaException as exc:
            # A failing callback or a transient group error: the member carries on (the core
            # already completed the rebalance step); a fatal error is raised again on every call.
            if exc.args and getattr(exc.args[0], "fatal", lambda: False)():
                raise
            log.warning("kconsumer: group member error: %s", exc)

    def owned(self) -> set[Key]:
        """The partitions this member owns now (assigned, their start position known)."""
        return {(tp.topic, tp.partition) for tp in self._consumer.assignment()}

    def wait_for_assignment(self, timeout_s: float) -> None:
        """Poll until the first assignment (maybe empty) was received and every assigned
        partition is owned, or `timeout_s` passed."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self.boundary()
            if self._assigned_once and not (set(self.fresh) - self.owned()):
                return
            time.sleep(0.02)
        log.warning("kconsumer: no assignment from group %s after %.1f s", self._options.group_id, timeout_s)

    def settle(self, completed: Mapping[Key, int]) -> None:
        """The batch that ended at `completed` is complete: remember its offsets and commit them to
        the group, for partitions this member owns (and planned) without interruption."""
        owned = self.owned()
        advanced = {}
        for key, offset in completed.items():
            if key in owned and key not in self.fresh:
                self.completed[key] = offset
                if self.committed.get(key) != offset:
                    advanced[key] = offset
        if advanced:
            self.commit(advanced)

    def commit(self, offsets: Mapping[Key, int]) -> bool:
        """Commit `offsets` (next offsets to read) to the group, synchronously. False on failure
        (logged: the checkpoint stays the query's own record; the group offset catches up later)."""
        try:
            self._consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())], asynchronous=False
            )
        except KafkaException as exc:
            log.warning(
                "kconsumer: committing %s to group %s failed: %s", offsets, self._options.group_id, exc
            )
            return False
        self.committed.update(offsets)
        return True

    def starts(self, previous: SourceOffset) -> dict[Key, int]:
        """Where each fresh, owned partition starts: the later of the group's committed offset and
        `previous` (the checkpoint's or last batch's end: a restarted query does not re-read what
        its checkpoint says it completed), else ``startingOffsets``. Resolved once per assignment."""
        owned = self.owned()
        pending = sorted(k for k, v in self.fresh.items() if v is None and k in owned)
        if pending:
            committed = self.group_offsets(pending)
            unknown = []
            for key in pending:
                candidates = [o for o in (committed.get(key), previous.offsets.get(key)) if o is not None]
                if candidates:
                    self.fresh[key] = max(candidates)
                    if previous.offsets.get(key) is not None and previous.offsets[key] > committed.get(
                        key, -1
                    ):
                        # The checkpoint completed more than the group knows: tell the group.
                        self.completed[key] = previous.offsets[key]
                        self.commit({key: previous.offsets[key]})
                else:
                    unknown.append(key)
            for key, offset in self._reset_positions(unknown).items():
                self.fresh[key] = offset
        return {k: v for k, v in self.fresh.items() if v is not None and k in owned}

    def planned(self, keys: Iterable[Key]) -> None:
        """Fresh partitions now in a planned batch: later batches continue from its end."""
        for key in keys:
            self.fresh.pop(key, None)

    def group_offsets(self, keys: list[Key]) -> dict[Key, int]:
        """The group's committed offsets of `keys` (absent when none)."""
        found = self._consumer.committed([TopicPartition(t, p) for t, p in keys], timeout=ADMIN_TIMEOUT_S)
        return {(tp.topic, tp.partition): tp.offset for tp in found if tp.offset >= 0}

    def _reset_positions(self, keys: list[Key]) -> dict[Key, int]:
        if not keys:
            return {}
        spec = self._options.starting
        wanted: dict[Key, int] = {}
        for key in keys:
            if isinstance(spec, dict):
                wanted[key] = spec.get(key, EARLIEST)
            else:
                wanted[key] = EARLIEST if spec == "earliest" else LATEST
        earliest = self.cluster.list_offsets([k for k, v in wanted.items() if v == EARLIEST], "earliest")
        latest = self.cluster.list_offsets([k for k, v in wanted.items() if v == LATEST], "latest")
        out = {}
        for key, value in wanted.items():
            resolved = (
                earliest.get(key) if value == EARLIEST else latest.get(key) if value == LATEST else value
            )
            if resolved is not None:  # else tried again at the next batch boundary
                out[key] = resolved
        log.info(
            "kconsumer: no committed offsets in group %s for %s: starting at %s",
            self._options.group_id,
            keys,
            out,
        )
        return out

    # -- callbacks (inside boundary(), on this thread) -------------------------------------------

    def _on_assign(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        self._assigned_once = True
        self.assignments += 1
        for tp in partitions:
            self.fresh[(tp.topic, tp.partition)] = None
        if partitions:
            log.info("kconsumer: assigned %s", [(tp.topic, tp.partition) for tp in partitions])

    def _on_revoke(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        final = {
            k: self.completed[k]
            for k in keys
            if k in self.completed and self.committed.get(k) != self.completed[k]
        }
        if final:
            self.commit(final)
        self.revocations += 1
        self._forget(keys)
        log.info("kconsumer: revoked %s (final offsets committed: %s)", keys, final)

    def _on_lost(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        self._forget(keys)
        log.warning("kconsumer: lost %s (already owned by another member: nothing committed)", keys)

    def _forget(self, keys: Iterable[Key]) -> None:
        for key in keys:
            self.completed.pop(key, None)
            self.committed.pop(key, None)
            self.fresh.pop(key, None)

    def close(self) -> None:
        """Leave the group: revocation callbacks commit the completed offsets first."""
        try:
            self._consumer.close(timeout=CLOSE_TIMEOUT_S)
        except Exception as exc:  # never hide the query's own outcome behind a close failure
            log.warning("kconsumer: closing the group member failed: %s", exc)


#: The module Spark runs a Python streaming source's driver side in (one process per query).
RUNNER_MODULE = "pyspark.sql.streaming.python_streaming_source_runner"


def _leave_on_sigterm(leaving: threading.Event) -> None:
    """Spark stops a query's stream-reader process with SIGTERM (``Process.destroy``), which would
    end it without calling the reader's ``stop()``: the member would stay in the group until its
    session times out. In that process only, SIGTERM raises SystemExit instead, so the runner's
    ``finally: reader.stop()`` runs and the member leaves (committing completed offsets).

    Spark also closes the runner's socket, so ``reader.stop()`` may already be running when the
    signal arrives: raising then would interrupt the leave it is waiting for. Once `leaving` is
    set, SIGTERM is ignored (the leave is bounded by `CLOSE_TIMEOUT_S`)."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if (
        getattr(spec, "name", None) != RUNNER_MODULE
        or threading.current_thread() is not threading.main_thread()
    ):
        return

    signal.signal(signal.SIGTERM, sigterm_handler(leaving))


def sigterm_handler(leaving: threading.Event) -> Callable[[int, Any], None]:
    """The SIGTERM handler of a stream-reader process (see `_leave_on_sigterm`)."""

    def on_sigterm(signum: int, _frame: Any) -> None:
        if leaving.is_set():
            log.info("kconsumer: SIGTERM while leaving the group: the leave goes on")
            return
        signal.signal(signum, signal.SIG_IGN)  # Spark sends SIGTERM twice; leaving is bounded
        raise SystemExit(128 + signum)

    return on_sigterm


class MemberRegistry:
    """Driver-side members by stream reader identity (this process only)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._members: dict[str, DriverMember] = {}
        self._handler_installed = False
        #: Set while a member leaves (the runner stops its one reader from its main thread): a
        #: SIGTERM must not interrupt that leave.
        self.leaving = threading.Event()

    def get(self, key: str, create: Callable[[], DriverMember]) -> DriverMember:
        """The member of reader `key`, created by `create()` on first use."""
        with self._lock:
            member = self._members.get(key)
            if member is None:
                if not self._handler_installed:
                    self._handler_installed = True
                    _leave_on_sigterm(self.leaving)
                member = self._members[key] = create()
            return member

    def find(self, key: str) -> DriverMember | None:
        """The member of reader `key`, if it was created."""
        with self._lock:
            return self._members.get(key)

    def close(self, key: str) -> None:
        """Close and forget the member of reader `key` (nothing if none)."""
        with self._lock:
            member = self._members.pop(key, None)
        if member is None:
            return
        self.leaving.set()
        try:
            member.close()
        finally:
            self.leaving.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._members)


#: The members of this process.
MEMBERS = MemberRegistry()
