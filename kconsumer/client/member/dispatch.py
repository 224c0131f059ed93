"""Sending calls to brokers once their API versions are known (sans-IO).

Each connection to a broker starts with ApiVersions (v3, then v0 when the broker refuses v3,
KIP-511); calls for a broker whose versions are not known yet wait here until they are. Any
failure of a request means its connection is gone (the driver closes a connection on a timeout
or transport error), so that broker's versions are asked again on the next connection: a broker
restarted with another version is negotiated afresh.

The dispatcher knows every request in flight by its request id, so an answer comes back with the
call it answers. What the answer means is the session's business.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import ErrorCode
from ...protocol.messages.api_versions import ApiVersionsResponse
from ...protocol.negotiation import (
    API_VERSIONS_FIRST_TRY,
    BrokerVersions,
    NoCommonVersionError,
    api_versions_outcome,
)
from ...protocol.schema import Message
from .calls import ApiVersionsCall, Call
from .effects import Node, SendRequest
from .model import Ids

#: The software version kconsumer announces in ApiVersions v3+.
SOFTWARE_VERSION = "0.1.0"


@dataclass
class Dispatched:
    """What dispatching produced: requests to send, calls that cannot be sent (with why), and the
    node whose versions were just learnt (its waiting calls are released by `release`)."""

    sends: list[SendRequest] = field(default_factory=list)
    failed: list[tuple[Call, ErrorCode, str]] = field(default_factory=list)
    ready: Node | None = None


class Dispatcher:
    """Version negotiation per broker, waiting calls, and the requests in flight."""

    def __init__(self, ids: Ids) -> None:
        self._ids = ids
        self.versions: dict[Node, BrokerVersions] = {}
        self._waiting: dict[Node, list[Call]] = {}
        self._asking: set[Node] = set()
        self._in_flight: dict[int, tuple[Node, Call]] = {}

    def submit(self, node: Node, call: Call) -> Dispatched:
        """Send `call` to `node` now, or once its versions are known."""
        versions = self.versions.get(node)
        if versions is None:
            self._waiting.setdefault(node, []).append(call)
            return self.ensure_versions(node)
        out = Dispatched()
        self._send(node, call, versions, out)
        return out

    def ensure_versions(self, node: Node) -> Dispatched:
        """Ask `node` for its versions unless they are known or already asked for."""
        out = Dispatched()
        if node not in self.versions and node not in self._asking:
            self._asking.add(node)
            self._send(node, ApiVersionsCall(node, API_VERSIONS_FIRST_TRY, SOFTWARE_VERSION), {}, out)
        return out

    def release(self, node: Node) -> Dispatched:
        """Send the calls that waited for `node`'s versions."""
        out = Dispatched()
        versions = self.versions.get(node)
        if versions is None:
            return out
        for call in self._waiting.pop(node, []):
            self._send(node, call, versions, out)
        return out

    def _send(self, node: Node, call: Call, versions: BrokerVersions, out: Dispatched) -> None:
        try:
            request = call.build(versions)
        except NoCommonVersionError as exc:
            out.failed.append((call, ErrorCode.UNSUPPORTED_VERSION, f"{node}: {exc}"))
            return
        request_id = self._ids.next()
        self._in_flight[request_id] = (node, call)
        out.sends.append(SendRequest(request_id, node, request, call.version, call.timeout_ms()))

    def answered(self, request_id: int) -> tuple[Node, Call] | None:
        """The call `request_id` answered (None: not in flight)."""
        return self._in_flight.pop(request_id, None)

    def on_versions(self, node: Node, call: ApiVersionsCall, response: Message) -> Dispatched:
        """An ApiVersions answer: learn the versions (`ready`), retry at v0 after a refusal, or
        fail the waiting calls."""
        out = Dispatched()
        assert isinstance(response, ApiVersionsResponse)
        outcome = api_versions_outcome(response, call.try_version)
        if outcome.ask_again_at is not None:
            self._send(node, ApiVersionsCall(node, outcome.ask_again_at, SOFTWARE_VERSION), {}, out)
            return out
        self._asking.discard(node)
        if outcome.versions is not None:
            self.versions[node] = outcome.versions
            out.ready = node
        else:
            assert outcome.error is not None
            message = f"{node}: ApiVersions failed with {outcome.error.name}"
            self.fail_waiting(node, ErrorCode.NETWORK_EXCEPTION, message, out)
        return out

    def connection_lost(self, node: Node) -> None:
        """A request to `node` failed: its connection is gone, and so are its versions."""
        self.versions.pop(node, None)

    def fail_waiting(self, node: Node, code: ErrorCode, message: str, out: Dispatched) -> None:
        """Fail every call waiting for `node`'s versions (its ApiVersions failed)."""
        self._asking.discard(node)
        out.failed.extend((call, code, message) for call in self._waiting.pop(node, []))
