"""The simulated network between member processes and the brokers.

A `Link` is one TCP connection from a member process to a broker, with the real client's
semantics (`kconsumer/client/runtime/connection.py`): requests are processed and answered in order;
a request without an answer after ``request.timeout.ms`` fails with REQUEST_TIMED_OUT and closes
the connection, failing every other request in flight on it with NETWORK_EXCEPTION; a dropped
connection fails every request in flight at once with NETWORK_EXCEPTION.

Faults:

* **drop**: the connection closes; requests not yet at the broker are lost (never processed),
  those already processed lose their responses.
* **lost message**: a request or a response is lost. As on a TCP connection, everything after it
  in the same direction is stuck too, until the request timeout closes the connection.
* **latency**: every message takes a latency drawn from the seed's range, sometimes a spike;
  order on one connection is kept.
* **partition**: a member's machine is cut off for a while: new connections fail after the
  connect timeout, messages on existing ones are lost.
* **broker crash** (coordinator failover): every connection to that broker drops, new ones fail.

Requests that reached the broker before a connection closed are processed; none is processed
after its connection closed, and none is duplicated (no reordering across connections).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...broker.coordinator.classic.replies import Deferred
from ...errors import ErrorCode
from ...protocol.messages.classic_group import JoinGroupResponse
from .host import CoordinatorHost, request_kind
from .params import FaultMix, SimParams
from .scheduler import Scheduler
from .trace import Trace

if TYPE_CHECKING:
    from .runtime import SimMember


@dataclass
class Pending:
    """A request in flight on a link."""

    rid: int
    kind: str
    version: int
    on_ok: Callable[[Any, Pending], None]
    on_fail: Callable[[ErrorCode, str], None]
    #: Produced by a coordinator that no longer had this member (a heartbeat to a zombie).
    to_zombie: bool = False
    done: bool = False


class Link:
    """One connection from a member process to a broker."""

    def __init__(self, link_id: int, proc: SimMember, broker: int) -> None:
        self.id = link_id
        self.proc = proc
        self.broker = broker
        self.alive = True
        self.last_arrival = 0
        self.last_delivery = 0
        self.requests_stuck = False
        self.responses_stuck = False
        self.inflight: dict[int, Pending] = {}


class Network:
    """Latency, faults and delivery between member processes and the brokers."""

    def __init__(
        self,
        sched: Scheduler,
        trace: Trace,
        rng: random.Random,
        params: SimParams,
        faults: FaultMix,
        host: CoordinatorHost,
    ) -> None:
        self.sched = sched
        self.trace = trace
        self.rng = rng
        self.params = params
        self.host = host
        self.lost_probability = faults.lost_probability
        self.spike_probability = faults.spike_probability
        self.spike_max_ms = faults.spike_max_ms
        self.isolated_until: dict[int, int] = {}
        self.links: list[Link] = []
        self._ids = 0
        self.faults_on = True
        host.on_broker_crash = self.crash_broker

    # -- basics -----------------------------------------------------------------------------------

    def latency(self) -> int:
        """One message's latency."""
        low, high = self.params.latency_ms
        delay = low + int(self.rng.random() * (high - low + 1))
        if self.faults_on and self.spike_probability and self.rng.random() < self.spike_probability:
            delay += self.rng.randint(0, self.spike_max_ms)
        return delay

    def isolated(self, slot: int) -> bool:
        """Whether the machine of member slot `slot` is cut off now."""
        return self.sched.now < self.isolated_until.get(slot, -1)

    def _lost(self) -> bool:
        return self.faults_on and self.lost_probability > 0 and self.rng.random() < self.lost_probability / 2

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    # -- connections --------------------------------------------------------------------------------

    def connect(self, proc: SimMember, broker: int, done: Callable[[Link | None], None]) -> None:
        """Open a connection (with ApiVersions): `done(link)` after a round trip, or `done(None)`
        after the connect timeout when the broker cannot be reached."""
        if self.isolated(proc.slot) or broker in self.host.down:
            proc.deliver_after(self.params.connect_timeout_ms, done, None)
            return
        link = Link(self._next_id(), proc, broker)
        proc.deliver_after(self.latency() + self.latency(), self._connected, link, done)

    def _connected(self, link: Link, done: Callable[[Link | None], None]) -> None:
        if self.isolated(link.proc.slot) or link.broker in self.host.down:
            done(None)
            return
        self.links.append(link)
        done(link)

    # -- requests ---------------------------------------------------------------------------------

    def send(
        self,
        link: Link,
        request: Any,
        version: int,
        on_ok: Callable[[Any, Pending], None],
        on_fail: Callable[[ErrorCode, str], None],
        timeout_ms: int | None = None,
    ) -> Pending:
        """Send a request at `version` on `link`; exactly one of `on_ok(response, pending)` /
        `on_fail(code, text)` runs (in the member process), unless the process dies first.
        `timeout_ms` replaces the request timeout when longer (a classic JoinGroup waits)."""
        pending = Pending(self._next_id(), request_kind(request), version, on_ok, on_fail)
        if not link.alive:
            link.proc.deliver_after(0, self._fail_one, pending, ErrorCode.NETWORK_EXCEPTION, "closed")
            return pending
        link.inflight[pending.rid] = pending
        if self._lost():
            link.requests_stuck = True
        arrival = max(self.sched.now + self.latency(), link.last_arrival)
        link.last_arrival = arrival
        if not link.requests_stuck:
            self.sched.at(arrival, self._arrive, link, pending, request)
        timeout = max(timeout_ms or 0, self.params.request_timeout_ms)
        link.proc.deliver_after(timeout, self._timeout, link, pending)
        return pending

    def _arrive(self, link: Link, pending: Pending, request: Any) -> None:
        if not link.alive or link.requests_stuck:
            return  # the connection closed or hangs before the request got through
        if self.isolated(link.proc.slot):
            link.requests_stuck = True
            return
        response = self.host.serve(
            link.broker, request, pending.version, link.proc.group_member_id, link.proc.member_id
        )
        if isinstance(response, Deferred):  # a classic JoinGroup or SyncGroup: answered later
            self.host.when_answered(response.ticket, lambda late: self._respond(link, pending, late))
            return
        if pending.kind == "hb" and not response.error_code:
            pending.to_zombie = link.proc.group_member_id not in self.host.member_ids()
        self._respond(link, pending, response)

    def _respond(self, link: Link, pending: Pending, response: Any) -> None:
        if isinstance(response, JoinGroupResponse) and not response.error_code:
            # Part of that generation from the moment the coordinator answers (heard or not).
            link.proc.joined_generation = response.generation_id
        if not link.alive:
            return
        if self._lost():
            link.responses_stuck = True
        delivery = max(self.sched.now + self.latency(), link.last_delivery)
        link.last_delivery = delivery
        if not link.responses_stuck:
            self.sched.at(delivery, self._deliver, link, pending, response)

    def _deliver(self, link: Link, pending: Pending, response: Any) -> None:
        if not link.alive or link.responses_stuck:
            return
        if self.isolated(link.proc.slot):
            link.responses_stuck = True
            return
        link.proc.deliver(self._complete, link, pending, response)

    def _complete(self, link: Link, pending: Pending, response: Any) -> None:
        if pending.done or not link.alive:
            return
        pending.done = True
        link.inflight.pop(pending.rid, None)
        pending.on_ok(response, pending)

    def _fail_one(self, pending: Pending, code: ErrorCode, text: str) -> None:
        if not pending.done:
            pending.done = True
            pending.on_fail(code, text)

    def _timeout(self, link: Link, pending: Pending) -> None:
        if pending.done:
            return
        self.close(link, f"{pending.kind} timed out", timed_out=pending)

    def close(self, link: Link, reason: str, timed_out: Pending | None = None) -> None:
        """Close `link` now; every request in flight fails in the member process (the timed-out
        one with REQUEST_TIMED_OUT, the others with NETWORK_EXCEPTION)."""
        if not link.alive:
            return
        link.alive = False
        if link in self.links:
            self.links.remove(link)
        proc = link.proc
        self.trace.log(
            self.sched.now, proc.label, f"connection {link.id} to broker {link.broker} closed: {reason}"
        )
        for rid in sorted(link.inflight):
            pending = link.inflight[rid]
            code = ErrorCode.REQUEST_TIMED_OUT if pending is timed_out else ErrorCode.NETWORK_EXCEPTION
            proc.deliver(self._fail_one, pending, code, reason)
        link.inflight.clear()
        proc.deliver(proc.link_closed, link)

    # -- faults -----------------------------------------------------------------------------------

    def drop_random(self) -> None:
        """Drop one connection (a random live one), if any."""
        live = [link for link in self.links if link.alive and link.proc.alive and not link.proc.paused]
        if live:
            link = live[self.rng.randrange(len(live))]
            self.trace.log(self.sched.now, "fault", f"drop connection {link.id} of {link.proc.label}")
            self.close(link, "dropped")

    def isolate(self, slot: int, duration_ms: int) -> None:
        """Cut member slot `slot` off for `duration_ms`."""
        self.isolated_until[slot] = max(self.isolated_until.get(slot, 0), self.sched.now + duration_ms)
        self.trace.log(self.sched.now, "fault", f"partition m{slot} for {duration_ms} ms")

    def crash_broker(self, broker: int) -> None:
        """A broker crashed: its connections drop."""
        for link in [link for link in self.links if link.broker == broker]:
            self.close(link, f"broker {broker} crashed")

    def end_faults(self) -> None:
        """Quiet phase: no more losses or spikes; partitions heal."""
        self.faults_on = False
        self.isolated_until.clear()
