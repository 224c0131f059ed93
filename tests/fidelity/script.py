"""The wire-level side of the fidelity suite: a scripted client on `kconsumer.protocol` that sends
the same requests to Apache Kafka and to the reference cluster, and turns each answer into plain,
comparable data.

Normalisation keeps what a client acts on and drops what legitimately differs between two runs:

* member ids become ``<member 1>``, ``<member 2>``, ... in order of first appearance (a server
  generates them at random), producer ids ``<producer 1>``, ..., topic ids ``<topic NAME>``
  (unknown ones ``<unknown topic id>``);
* topics get a name of their own per run (``orders.7``; `t` gives it), shown by their logical
  name (``orders``): a shared Apache Kafka deletes the previous run's topics asynchronously, and a
  group must never see another run's topic of the same name;
* throttle times, hosts and ports are dropped; an error *message* is reduced to whether there is
  one (the codes are compared, the wording is each implementation's own);
* lists of partitions are sorted.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any

from backends import Cluster

from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from kconsumer.protocol.messages.list_groups import DeleteGroupsRequest
from kconsumer.protocol.messages.metadata import (
    COORDINATOR_KEY_TYPE_GROUP,
    COORDINATOR_KEY_TYPE_TRANSACTION,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)
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
        "transaction_start_time_ms",
    }
)
#: Answers that only say the coordinator is still being elected, loaded or moved: a client
#: retries them, and so does the script (how often they occur is timing, not behaviour).
_RUNS = itertools.count(1)
#: Lists of these (partitions, members, topics) are compared whatever their order.
SORT_KEYS = ("partition_index", "member_id", "topic_id", "name", "group_id")
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
        self._producers: dict[int, str] = {}
        self._topics: dict[Uuid, str] = {}
        #: What the scenario observed, in order: (label, normalised value).
        self.observed: list[tuple[str, Any]] = []
        self._run = next(_RUNS)
        self._logical: dict[str, str] = {}

    def close(self) -> None:
        self._bootstrap.close()
        for client in self._clients.values():
            client.close()

    # -- setup -----------------------------------------------------------------------------------

    def t(self, name: str) -> str:
        """The real name of logical topic `name` in this run."""
        real = f"{name}.{self._run}"
        self._logical[real] = name
        return real

    def topic(self, name: str, partitions: int = 1) -> Uuid:
        """Create logical topic `name` and wait until the group coordinator assigns it; its id
        (normalised to ``<topic NAME>`` from now on)."""
        topic_id = self.cluster.create_topic(self.t(name), partitions)
        self._topics[topic_id] = name
        self._coordinator_sees(name, present=True)
        return topic_id

    def delete_topic(self, name: str) -> None:
        """Delete logical topic `name` and wait until the group coordinator no longer assigns it."""
        self.cluster.delete_topic(self.t(name))
        self._coordinator_sees(name, present=False)

    def grow(self, name: str, total: int) -> None:
        """Give logical topic `name` `total` partitions and wait until the group coordinator
        assigns them all."""
        self.cluster.create_partitions(self.t(name), total)
        self._coordinator_sees(name, present=True, partitions=total)

    def _coordinator_sees(self, name: str, present: bool, partitions: int | None = None) -> None:
        """Apache Kafka's group coordinator learns of topic changes from the metadata log after
        the broker does; the reference cluster's at once. A throwaway member subscribed to the
        topic in a group of its own shows when the coordinator has caught up (then the group is
        deleted), so what a scenario observes next never depends on that lag."""
        group, member = f"probe.{name}.{self._run}", f"probe-{self._run}-{name}"
        request = ConsumerGroupHeartbeatRequest(
            group_id=group,
            member_id=member,
            member_epoch=0,
            rebalance_timeout_ms=1000,
            subscribed_topic_names=[self.t(name)],
            topic_partitions=[],
        )

        def caught_up() -> bool:
            answer = self.send(request, group=group)
            assert isinstance(answer, ConsumerGroupHeartbeatResponse) and answer.error_code == 0, answer
            request.member_epoch = answer.member_epoch
            if answer.assignment is None:
                return False
            count = sum(len(tp.partitions) for tp in answer.assignment.topic_partitions)
            if partitions is not None:
                return count == partitions
            return (count > 0) == present

        self.until(
            f"the coordinator to see {name!r} {'created' if present else 'deleted'}", caught_up, every=0.05
        )
        self.send(request.replace(member_epoch=-1), group=group)
        self.send(DeleteGroupsRequest(groups_names=[group]), group=group)

    def topic_id(self, name: str) -> Uuid:
        topic_id = self.cluster.topic_id(self.t(name))
        self._topics[topic_id] = name
        return topic_id

    # -- requests --------------------------------------------------------------------------------

    def coordinator(self, group: str, key_type: int = COORDINATOR_KEY_TYPE_GROUP) -> WireClient:
        """A connection to the coordinator of the group (or, with `key_type` 1, of the
        transactional id), found with FindCoordinator and waited for."""
        deadline = time.monotonic() + 30
        while True:
            answer = self._bootstrap.call(
                FindCoordinatorRequest(key_type=key_type, coordinator_keys=[group]), FindCoordinatorResponse
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

    def send(
        self,
        request: Message,
        *,
        group: str | None = None,
        version: int | None = None,
        transactional_id: str | None = None,
    ) -> Message:
        """`request` to the group's coordinator (to the transactional id's with
        `transactional_id`; any broker when neither is given), at `version` (the highest both
        sides speak when None)."""
        deadline = time.monotonic() + 30
        if transactional_id is not None:
            group = transactional_id
        key_type = (
            COORDINATOR_KEY_TYPE_GROUP if transactional_id is None else COORDINATOR_KEY_TYPE_TRANSACTION
        )
        while True:
            client = self._bootstrap if group is None else self.coordinator(group, key_type)
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
        if isinstance(value, str) and ("member_id" in field or field == "leader"):
            return self.member(value)
        if field == "producer_id" and isinstance(value, int) and value >= 0:
            return self._producers.setdefault(value, f"<producer {len(self._producers) + 1}>")
        if isinstance(value, str) and value in self._logical:
            return self._logical[value]
        if isinstance(value, list):
            items = [self.plain(v, field) for v in value]
            if field in ("partitions", "partition_indexes") and all(isinstance(i, int) for i in items):
                return sorted(items)
            for key in SORT_KEYS:  # an answer's order of partitions or members carries no meaning
                if items and all(isinstance(i, dict) and key in i for i in items):
                    return sorted(items, key=lambda item: str(item[key]))
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
