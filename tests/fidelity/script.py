"""The wire-level side of the fidelity suite: a scripted client on `kconsumer.protocol` that sends
the same requests to Apache Kafka and to the reference cluster, and turns each answer into plain,
comparable data.

Normalisation keeps what a client acts on and drops what legitimately differs between two runs:

* member ids become ``<member 1>``, ``<member 2>``, ... in order of first appearance (a server
  generates them at random), topic ids ``<topic NAME>`` (unknown ones ``<unknown topic id>``);
* throttle times, hosts and ports are dropped; an error *message* is reduced to whether there is
  one (the codes are compared, the wording is each implementation's own);
* lists of partitions are sorted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from backends import Cluster

from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kconsumer.protocol.schema import Message, Struct
from kconsumer.protocol.uuid import ZERO_UUID, Uuid
from kconsumer.testing.wire import WireClient

#: Fields whose value is never compared: timing and addresses, and kconsumer's own heartbeat
#: extension (tags 10000+: only members with client-side assignors read them; Kafka has none).
DROPPED = frozenset(
    {
        "throttle_time_ms",
        "host",
        "port",
        "cluster_id",
        "client_host",
        "should_compute_assignment",
        "assignment_metadata",
        "pending_topic_partitions",
        "client_assignors",
    }
)
#: Answers that only say the coordinator is still being elected, loaded or moved: a client
#: retries them, and so does the script (how often they occur is timing, not behaviour).
COORDINATOR_MOVING = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
)
#: Fields reduced to whether they are set.
PRESENCE = frozenset({"error_message"})


class Script:
    """One server's run of a scenario: connections, the names it created, and the normaliser."""

    def __init__(self, cluster: Cluster, backend: str) -> None:
        self.cluster = cluster
        self.backend = backend
        host, port = cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        self._bootstrap = WireClient.connect(host, int(port), client_id="fidelity")
        self._clients: dict[int, WireClient] = {}
        self._members: dict[str, str] = {}
        self._topics: dict[Uuid, str] = {}
        #: What the scenario observed, in order: (label, normalised value).
        self.observed: list[tuple[str, Any]] = []

    def close(self) -> None:
        self._bootstrap.close()
        for client in self._clients.values():
            client.close()

    # -- setup -----------------------------------------------------------------------------------

    def topic(self, name: str, partitions: int = 1) -> Uuid:
        """Create a topic; its id (normalised to ``<topic NAME>`` from now on)."""
        topic_id = self.cluster.create_topic(name, partitions)
        self._topics[topic_id] = name
        return topic_id

    def delete_topic(self, name: str) -> None:
        self.cluster.delete_topic(name)

    def topic_id(self, name: str) -> Uuid:
        topic_id = self.cluster.topic_id(name)
        self._topics[topic_id] = name
        return topic_id

    # -- requests --------------------------------------------------------------------------------

    def coordinator(self, group: str) -> WireClient:
        """A connection to the group's coordinator (found with FindCoordinator, waited for)."""
        deadline = time.monotonic() + 30
        while True:
            answer = self._bootstrap.call(
                FindCoordinatorRequest(coordinator_keys=[group]), FindCoordinatorResponse
            )
            found = answer.coordinators[0]
            if found.error_code == 0:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"no coordinator for {group!r}: {ErrorCode.of(found.error_code).name}")
            time.sleep(0.05)
        client = self._clients.get(found.node_id)
        if client is None or client.closed:
            client = WireClient.connect(found.host, found.port, client_id="fidelity")
            self._clients[found.node_id] = client
        return client

    def send(self, request: Message, *, group: str | None = None, version: int | None = None) -> Message:
        """`request` to the group's coordinator (any broker when `group` is None), at `version`
        (the highest both sides speak when None)."""
        deadline = time.monotonic() + 30
        while True:
            client = self._bootstrap if group is None else self.coordinator(group)
            answer = client.request(request, version)
            if group is None or _error_code(answer) not in COORDINATOR_MOVING or time.monotonic() > deadline:
                return answer
            time.sleep(0.05)

    def observe(self, label: str, value: Any) -> Any:
        """Record a normalised observation; returns `value` unchanged for the scenario's use."""
        self.observed.append((label, self.plain(value)))
        return value

    def call(
        self, label: str, request: Message, *, group: str | None = None, version: int | None = None
    ) -> Any:
        """`send`, then `observe` the answer under `label`; returns the answer."""
        return self.observe(label, self.send(request, group=group, version=version))

    # -- normalisation ---------------------------------------------------------------------------

    def member(self, member_id: str | None) -> str | None:
        """The stable label of a server-chosen member id."""
        if not member_id:
            return member_id
        return self._members.setdefault(member_id, f"<member {len(self._members) + 1}>")

    def name_member(self, member_id: str, label: str) -> None:
        """Give a client-chosen member id a fixed label (the same on both servers)."""
        self._members[member_id] = label

    def plain(self, value: Any, field: str = "") -> Any:
        """`value` as plain data (see the module docstring)."""
        if isinstance(value, Struct):
            out: dict[str, Any] = {}
            for spec in type(value).__kafka_fields__:
                if spec.name in DROPPED:
                    continue
                item = value.__dict__.get(spec.name)
                if spec.name in PRESENCE:
                    out[spec.name] = "<set>" if item else None
                else:
                    out[spec.name] = self.plain(item, spec.name)
            return out
        if isinstance(value, Uuid):
            if value == ZERO_UUID:
                return "<zero>"
            name = self._topics.get(value)
            return f"<topic {name}>" if name is not None else "<unknown topic id>"
        if isinstance(value, str) and "member_id" in field:
            return self.member(value)
        if isinstance(value, list):
            items = [self.plain(v, field) for v in value]
            if field in ("partitions", "partition_indexes") and all(isinstance(i, int) for i in items):
                return sorted(items)
            return items
        if isinstance(value, (bytes, bytearray)):
            return f"<{len(value)} bytes>"
        if isinstance(value, dict):
            return {self.plain(k): self.plain(v) for k, v in value.items()}
        return value

    def until(self, what: str, probe: Callable[[], Any], timeout: float = 30.0, every: float = 0.1) -> Any:
        """Call `probe` until it returns something truthy (returned): server timing differs, the
        state reached must not."""
        deadline = time.monotonic() + timeout
        while True:
            value = probe()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.backend}: timed out waiting for {what}")
            time.sleep(every)


def _error_code(answer: Message) -> int:
    """The answer's top-level (or only group's) error code."""
    code = getattr(answer, "error_code", None)
    if code:
        return int(code)
    groups = getattr(answer, "groups", None)
    if groups and isinstance(groups[0], Struct):
        return int(getattr(groups[0], "error_code", 0) or 0)
    return 0
