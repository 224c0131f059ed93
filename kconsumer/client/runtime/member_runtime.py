"""Drives the member session on the background loop with the real clock: I/O only.

What it does with the session's effects: `SendRequest` opens (or reuses) a connection to the node
and reports `ResponseReceived` or `RequestFailed`; `RunAssignor` runs ``assign()`` on the
assignor thread and reports `AssignorFinished`; `AnswerQuery` completes the future the
application thread waits on; `ApplicationWork` goes, in order, into `app_queue`, which the
consumer facade runs inside poll/consume/close and reports back with `post`. The session's
``next_deadline`` arms one timer. Every decision is the session's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import random
import time
from collections.abc import Callable
from typing import Any

from ...errors import ErrorCode, KConsumerError
from ...protocol.api import ApiKey
from ...protocol.schema import Message
from ..config import ConsumerConfig
from ..local_assignors import LocalAssignors
from ..member import MemberSession, MemberState
from ..member.cluster import parse_bootstrap
from ..member.effects import AnswerQuery, ApplicationWork, Effect, RunAssignor, SendRequest
from ..member.events import (
    AssignorFinished,
    ClockOffset,
    Event,
    OffsetsQuery,
    Poll,
    RequestFailed,
    ResponseReceived,
    Tick,
)
from ..member.model import TopicIdPartition
from ..metrics import ConsumerMetrics
from ..sasl import AuthenticationFailedError
from ..tls import ConnectionSecurity
from .authentication import SaslAuthenticator
from .background import BackgroundLoop
from .connection import Address, BrokerConnection, RequestTimeoutError, TransportError
from .connections import Connections
from .inbox import Inbox

log = logging.getLogger("kconsumer")

#: States in which a rebalance is under way: the application thread polls in short slices.
BUSY_STATES = frozenset(
    {
        MemberState.JOINING,
        MemberState.RECONCILING,
        MemberState.ACKNOWLEDGING,
        MemberState.FENCED,
        MemberState.PREPARE_LEAVING,
        MemberState.LEAVING,
    }
)

#: Longest time the application waits inside librdkafka before looking for the member's work,
#: while the member can post none (nothing in flight, no timer due: see `wait_slice`).
IDLE_SLICE_S = 0.05
#: The same while a rebalance is under way or an answer that may bring work is awaited.
BUSY_SLICE_S = 0.005

#: Requests whose round trip the metrics record, by kind.
_TIMED: dict[int, str] = {
    ApiKey.CONSUMER_GROUP_HEARTBEAT: "heartbeat",
    ApiKey.HEARTBEAT: "heartbeat",
    ApiKey.OFFSET_COMMIT: "commit",
}

#: Builds a query event from its token and deadline (milliseconds on the loop's clock).
QueryFactory = Callable[[int, int], Event]


_INFINITY = float("inf")

#: The member hears the wall clock again (`ClockOffset`) when it moved by this much against the
#: loop's clock (a clock step): less is the two clocks' reading jitter.
CLOCK_MOVED_MS = 2


def wait_slice(state: MemberState, quiet_until: float, now: float) -> float:
    """`MemberRuntime.wait_slice`'s rule: `quiet_until` is when the member may next post work
    (0 while a request is in flight)."""
    if state in BUSY_STATES:
        return BUSY_SLICE_S
    quiet = quiet_until - now
    return IDLE_SLICE_S if quiet >= IDLE_SLICE_S else max(quiet, BUSY_SLICE_S)


def _now_ms(loop: asyncio.AbstractEventLoop) -> int:
    return int(loop.time() * 1000)


def _wall_offset_ms(now_ms: int) -> int:
    """The wall clock minus the loop's clock (whose reading is `now_ms`)."""
    return int(time.time() * 1000) - now_ms


class MemberRuntime:
    """One consumer's background side: the member session, its timer, connections and tasks."""

    def __init__(
        self,
        config: ConsumerConfig,
        member_id: str,
        background: BackgroundLoop,
        assignors: LocalAssignors | None = None,
        security: ConnectionSecurity | None = None,
        metrics: ConsumerMetrics | None = None,
    ) -> None:
        self.config = config
        self.group_id = config.require_group()
        self.member_id = member_id
        self.app_queue: Inbox[ApplicationWork] = Inbox()
        self._bootstrap = parse_bootstrap(config.bootstrap_servers)
        self._connections = Connections(
            config.client_id,
            config.socket_connection_setup_timeout_ms / 1000,
            config.request_timeout_ms / 1000,
            security.tls if security is not None else None,
            SaslAuthenticator(security.sasl) if security is not None and security.sasl is not None else None,
        )
        self._bg = background
        self._metrics = metrics
        if metrics is not None:
            metrics.member_epoch = lambda: max(self.member_epoch, 0)
        self._assignors = assignors
        self._assign_thread: concurrent.futures.ThreadPoolExecutor | None = None
        if assignors is not None:
            self._assign_thread = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix=f"kconsumer-assignor-{member_id[:8]}"
            )
        self._session: MemberSession | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        #: When (loop clock = monotonic seconds) the timer fires next, and until when the member
        #: can post no work: nothing in flight, no timer before then (0: something is in flight;
        #: a member that never sent anything, such as a consumer that only assigns, is quiet).
        self._timer_at = _INFINITY
        self._quiet_until = _INFINITY
        self._answers: dict[int, concurrent.futures.Future[Any]] = {}
        self._tokens = 0
        #: The wall clock's offset the session last heard of (`ClockOffset`).
        self._wall_offset: int | None = None
        self._closed = False
        #: Set by the consumer: the count of polls the application made without telling the
        #: session (see `_unnoted_polls`; the count the session last heard of beside it), and
        #: what to call after posting work to the application thread.
        self.unnoted_polls: Callable[[], int] | None = None
        self._unnoted_seen = 0
        self.on_app_work: Callable[[], Any] | None = None
        #: Mirrors of the session, readable from the application thread.
        self.state = MemberState.UNSUBSCRIBED
        self.member_epoch = 0
        self.assignment: tuple[TopicIdPartition, ...] = ()
        background.call(self._start)

    # -- application-thread API ---------------------------------------------------------------

    def wait_slice(self, now: float) -> float:
        """How long (seconds) the application may wait inside librdkafka, from `now` (monotonic),
        before looking for the member's work again: `BUSY_SLICE_S` while a rebalance or leave
        is under way or a request the member sent is unanswered (its answer may bring work:
        a new assignment after a member left), else up to the member's next timer (which sends
        the next heartbeat), at most `IDLE_SLICE_S`. librdkafka's wait cannot be woken from
        another thread; ending it where work can appear is what makes callbacks prompt."""
        return wait_slice(self.state, self._quiet_until, now)

    def post(self, event: Event, brings_work: bool = True) -> None:
        """Hand an event to the session (thread-safe; handled on the background loop). Until the
        loop has handled an event that `brings_work` (a subscription, a finished callback: its
        effects may post work back at once), the application waits in short slices; a member
        that was quiet (say, not yet subscribed) would otherwise keep it in librdkafka for up to
        `IDLE_SLICE_S` past the work's arrival. The loop sets the real value when it handles the
        event (always after this write); an earlier event's handling in between can only bring
        back the long slice for a moment, never leave a short one behind."""
        if brings_work:
            self._quiet_until = 0.0
        self._bg.call(self._handle, event)

    def submit(self, query: QueryFactory, timeout_s: float) -> concurrent.futures.Future[Any]:
        """Ask the session a question (thread-safe); the future gets the answer or the query's
        error (the session answers by `timeout_s`)."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._bg.call(self._ask, query, int(timeout_s * 1000), future)
        return future

    def ask(self, query: QueryFactory, timeout_s: float) -> Any:
        """Ask the session a question and wait for the answer (application thread). Raises the
        query's error, or TimeoutError after `timeout_s`."""
        future = self.submit(query, timeout_s)
        try:
            return future.result(timeout_s + 1.0)
        except concurrent.futures.TimeoutError:
            raise TimeoutError("no answer from the consumer's background thread") from None

    def lookup_offsets(
        self, wanted: dict[tuple[str, int], int], isolation: int, timeout_s: float
    ) -> dict[tuple[str, int], int]:
        """ListOffsets through the session (the application core's `MemberLink`): the offset of
        each partition at `wanted`'s timestamp; raises when the lookup fails."""
        found: dict[tuple[str, int], int] = self.ask(
            lambda token, deadline: OffsetsQuery(token, wanted, isolation, deadline), timeout_s
        )
        return found

    def shutdown(self) -> None:
        """Stop the timer, cancel the network tasks, close the connections (thread-safe)."""
        self._bg.call(self._shutdown)
        if self._assign_thread is not None:
            self._assign_thread.shutdown(wait=False, cancel_futures=True)

    # -- loop side ----------------------------------------------------------------------------

    def _start(self) -> None:
        loop = asyncio.get_running_loop()
        self._session = MemberSession(
            self.config.member_config(),
            self._bootstrap,
            self.member_id,
            _now_ms(loop),
            rand=random.random,
            on_state_change=None if self._metrics is None else self._metrics.member_state_changed,
        )

    def _ask(self, query: QueryFactory, timeout_ms: int, future: concurrent.futures.Future[Any]) -> None:
        self._tokens += 1
        self._answers[self._tokens] = future
        self._handle(query(self._tokens, _now_ms(asyncio.get_running_loop()) + timeout_ms))

    def _handle(self, event: Event) -> None:
        session = self._session
        if session is None or self._closed:
            return
        loop = asyncio.get_running_loop()
        now = _now_ms(loop)
        effects = self._clock(session, now)
        if type(event) is Tick:
            effects += self._unnoted_polls(session, now)
        effects += session.handle(event, now)
        self.state, self.member_epoch = session.state, session.member_epoch
        self.assignment = session.assignment
        for effect in effects:
            _EXECUTE[type(effect)](self, effect)
        self._arm_timer(loop, session.next_deadline(now))
        self._note_quiet()

    def _note_quiet(self) -> None:
        self._quiet_until = 0.0 if self._tasks else self._timer_at

    def _clock(self, session: MemberSession, now: int) -> list[Effect]:
        """The wall clock for the session's heartbeat grid: before its first event, then again
        whenever it moved against the loop's clock."""
        offset = _wall_offset_ms(now)
        if self._wall_offset is not None and abs(offset - self._wall_offset) < CLOCK_MOVED_MS:
            return []
        self._wall_offset = offset
        return list(session.handle(ClockOffset(offset), now))

    def _unnoted_polls(self, session: MemberSession, now: int) -> list[Effect]:
        """A `Poll` for the polls the application made since the last tick without telling the
        session (buffered records handed out between two full checks): a slow application in a
        run of buffered records is never taken for one that stopped polling; its last poll is
        at most dated to this tick."""
        count = self.unnoted_polls() if self.unnoted_polls is not None else self._unnoted_seen
        if count == self._unnoted_seen:
            return []
        self._unnoted_seen = count
        return list(session.handle(Poll(), now))

    def _arm_timer(self, loop: asyncio.AbstractEventLoop, deadline_ms: int | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = _INFINITY
        if deadline_ms is not None and not self._closed:
            self._timer_at = deadline_ms / 1000
            self._timer = loop.call_at(self._timer_at, self._handle, Tick())

    def _spawn(self, coroutine: Any) -> None:
        if self._closed:
            coroutine.close()
            return
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._note_quiet()
        if not task.cancelled() and task.exception() is not None:
            log.error("kconsumer runtime task failed", exc_info=task.exception())

    def _shutdown(self) -> None:
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        for task in list(self._tasks):
            task.cancel()
        self._connections.close()
        for future in self._answers.values():
            future.cancel()
        self._answers.clear()

    # -- effects --------------------------------------------------------------------------------

    def _to_application(self, work: ApplicationWork) -> None:
        self.app_queue.put(work)
        if self.on_app_work is not None:
            self.on_app_work()

    def _send(self, effect: SendRequest) -> None:
        self._spawn(self._request(effect))

    async def _request(self, effect: SendRequest) -> None:
        event: Event
        timed = _TIMED.get(effect.request.API_KEY) if self._metrics is not None else None
        try:
            connection = await self._connections.get(Address(effect.node.host, effect.node.port))
            timeout_s = None if effect.timeout_ms is None else effect.timeout_ms / 1000
            if timed is None:
                response = await connection.request(effect.request, effect.version, timeout_s)
            else:
                response = await self._timed_request(connection, effect, timeout_s, timed)
        except RequestTimeoutError as exc:
            event = RequestFailed(effect.request_id, ErrorCode.REQUEST_TIMED_OUT, str(exc))
        except AuthenticationFailedError as exc:
            event = RequestFailed(effect.request_id, ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc))
        except TransportError as exc:
            event = RequestFailed(effect.request_id, ErrorCode.NETWORK_EXCEPTION, str(exc))
        else:
            event = ResponseReceived(effect.request_id, response)
        self._handle(event)

    async def _timed_request(
        self, connection: BrokerConnection, effect: SendRequest, timeout_s: float | None, kind: str
    ) -> Message:
        """A heartbeat or commit, its round trip recorded in the metrics."""
        metrics = self._metrics
        assert metrics is not None
        if kind == "heartbeat":
            metrics.heartbeat_sent()
        started = time.monotonic()
        response = await connection.request(effect.request, effect.version, timeout_s)
        elapsed = time.monotonic() - started
        (metrics.heartbeat_answered if kind == "heartbeat" else metrics.commit_answered)(elapsed)
        return response

    def _run_assignor(self, effect: RunAssignor) -> None:
        self._spawn(self._assign(effect))

    async def _assign(self, effect: RunAssignor) -> None:
        assignors = self._assignors
        event: Event
        if assignors is None:
            error = KConsumerError(f"no local assignor {effect.assignor_name!r} is configured")
            event = AssignorFinished(effect.run_id, error=error)
        else:
            loop = asyncio.get_running_loop()
            try:
                result = await loop.run_in_executor(
                    self._assign_thread, assignors.assign, effect.assignor_name, effect.spec
                )
            except Exception as exc:
                event = AssignorFinished(effect.run_id, error=exc)
            else:
                event = AssignorFinished(effect.run_id, result)
        self._handle(event)

    def _answer(self, effect: AnswerQuery) -> None:
        future = self._answers.pop(effect.token, None)
        if future is None or future.done():
            return
        if effect.error is not None:
            future.set_exception(effect.error)
        else:
            future.set_result(effect.result)


_EXECUTE: dict[type[Effect], Callable[[MemberRuntime, Any], None]] = {
    SendRequest: MemberRuntime._send,
    RunAssignor: MemberRuntime._run_assignor,
    AnswerQuery: MemberRuntime._answer,
    **{kind: MemberRuntime._to_application for kind in ApplicationWork.__subclasses__()},
}
