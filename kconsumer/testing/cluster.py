"""`ReferenceCluster`: the reference cluster in a background thread, for tests, demos and benchmarks.

::

    with ReferenceCluster(session_timeout_ms=2000, heartbeat_interval_ms=200) as cluster:
        cluster.create_topic("orders", partitions=4)
        cluster.produce("orders", [b"a", b"b", b"c"])
        consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap_servers, ...})
        ...
        print(cluster.describe_group("my-group"))

Every method may be called from any thread: the call hops onto the server's event loop and waits
for the answer. Admin helpers go through the same validation as the wire (a failure raises the
`kconsumer.errors.KafkaApiError` a client would get).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, TypeVar

from ..broker.coordinator import CoordinatorConfig
from ..broker.coordinator.classic.model import ClassicGroup
from ..broker.coordinator.model import ConsumerGroup, ConsumerGroupMember
from ..broker.coordinator.workers.model import WorkerGroup as WorkerGroupState
from ..broker.server import Broker, ReferenceServer, ServerConfig
from ..broker.server.config import Listener
from ..broker.server.connection import ConnectionInfo
from ..broker.server.faults import FOREVER
from ..broker.server.security import Acl
from ..errors import ErrorCode, error_for
from ..protocol import records
from ..protocol.messages.admin import (
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from ..protocol.messages.list_groups import DeleteGroupsRequest, DeleteGroupsResponse
from ..protocol.messages.produce import (
    ACKS_ALL,
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from ..protocol.uuid import Uuid
from .cluster_brokers import ClusterBrokers
from .descriptions import (
    ClassicGroupDescription,
    ClassicMemberDescription,
    GroupDescription,
    MemberDescription,
)
from .partitioner import RoundRobin, Value, as_bytes
from .secured import ClusterSecurity

T = TypeVar("T")


_START_TIMEOUT_S = 10.0
_CALL_TIMEOUT_S = 30.0


class ReferenceCluster(ClusterBrokers):
    """The reference cluster (`brokers` in-memory, Kafka-wire-compatible brokers sharing one
    metadata view) in a background thread.

    A context manager: entering starts it on `host` and `port` (0: free ports), leaving stops it.
    Point any Kafka client at `bootstrap_servers`. Keyword options shorten the group coordinator's
    timers for tests (Kafka's defaults otherwise: 45 s session timeout, 5 s heartbeat interval,
    1 s assignment interval) and choose its server-side `assignors` (the first is the default).

    Besides admin and data helpers, it injects faults for the consumer's fault tests:
    `inject_error`, `delay_responses`, `drop_responses`, `fail_over_coordinator` and
    `drop_connections`; and the broker faults of a multi-broker cluster (`stop_broker`,
    `start_broker`, `move_coordinator`, `move_leader`, with `coordinator_node` and `leader`).
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        heartbeat_interval_ms: int | None = None,
        session_timeout_ms: int | None = None,
        assignment_interval_ms: int | None = None,
        assignors: Iterable[str] | None = None,
        auto_create_topics: bool = False,
        max_group_size: int | None = None,
        default_partitions: int = 1,
        retention_bytes: int | None = None,
        brokers: int = 1,
        security_protocol: str = "PLAINTEXT",
        ssl_client_auth: bool = False,
        sasl_mechanisms: Iterable[str] = ("SCRAM-SHA-512",),
        users: Mapping[str, str] | None = None,
        acls: Iterable[Acl] | None = None,
        super_users: Iterable[str] = (),
        max_reauth_ms: int | None = None,
        plaintext_listener: bool = False,
        initial_rebalance_delay_ms: int | None = None,
        migration_policy: str | None = None,
        group_protocols: Iterable[str] = ("classic", "consumer"),
        config: ServerConfig | None = None,
    ) -> None:
        """`security_protocol` PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. TLS listeners use a
        certificate generated at start (`client_config` gives clients what they need to trust it);
        `ssl_client_auth` also requires client certificates (mutual TLS; the principal is the
        certificate's subject). SASL listeners enable `sasl_mechanisms` (PLAIN, SCRAM-SHA-256,
        SCRAM-SHA-512, OAUTHBEARER with unsecured JWTs) for `users` (name: password), and ask
        clients to re-authenticate every `max_reauth_ms` (``connections.max.reauth.ms``). `acls`
        (`kconsumer.testing.Acl` allow rules) turn authorization on: what no rule allows is
        denied, except to `super_users` (``User:admin``). `plaintext_listener` adds a second,
        PLAINTEXT listener to every broker (`client_config(listener="PLAINTEXT")`).
        `initial_rebalance_delay_ms` is a classic group's first wait for members
        (``group.initial.rebalance.delay.ms``, 3000 by default), `migration_policy`
        ``group.consumer.migration.policy``. `group_protocols` is
        ``group.coordinator.rebalance.protocols``: ``("classic",)`` makes a cluster without KIP-848,
        as brokers before Kafka 4.0."""
        self.security = ClusterSecurity.build(
            security_protocol,
            ssl_client_auth=ssl_client_auth,
            sasl_mechanisms=sasl_mechanisms,
            users=users,
            acls=acls,
            super_users=super_users,
            max_reauth_ms=max_reauth_ms,
        )
        self.certificates = self.security.certificates
        if config is None:
            coordinator: dict[str, Any] = {}
            for key, value in (
                ("heartbeat_interval_ms", heartbeat_interval_ms),
                ("session_timeout_ms", session_timeout_ms),
                ("assignment_interval_ms", assignment_interval_ms),
                ("max_group_size", max_group_size),
                ("classic_initial_rebalance_delay_ms", initial_rebalance_delay_ms),
                ("migration_policy", migration_policy),
            ):
                if value is not None:
                    coordinator[key] = value
            if assignors is not None:
                coordinator["assignors"] = tuple(assignors)
            config = ServerConfig(
                host=host,
                port=port,
                auto_create_topics=auto_create_topics,
                default_partitions=default_partitions,
                retention_bytes=retention_bytes,
                coordinator=CoordinatorConfig(**coordinator),
                tls=self.security.tls,
                sasl=self.security.sasl,
                authorizer=self.security.authorizer,
                brokers=brokers,
                group_protocols=tuple(group_protocols),
                extra_listeners=(Listener("PLAINTEXT"),) if plaintext_listener else (),
            )
        self.config = config
        self._server = ReferenceServer(config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._round_robin = RoundRobin()

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> ReferenceCluster:
        """Start the server thread and wait until it listens. Returns self."""
        if self._thread is not None:
            raise RuntimeError("the cluster is already started")
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._run, args=(started,), name="kconsumer-reference-cluster", daemon=True
        )
        self._thread.start()
        started.result(_START_TIMEOUT_S)
        return self

    def _run(self, started: concurrent.futures.Future[None]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._server.start())
        except BaseException as exc:
            started.set_exception(exc)
            loop.close()
            return
        started.set_result(None)
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self._server.stop())
            # What the server left running (a TLS handshake of a connection accepted as it
            # stopped): cancelled and awaited, so closing the loop destroys no pending task.
            leftover = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in leftover:
                task.cancel()
            if leftover:
                loop.run_until_complete(asyncio.gather(*leftover, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    def stop(self) -> None:
        """Close every connection and stop the server thread. Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._loop = None
        self._thread = None
        if not loop.is_closed():
            loop.call_soon_threadsafe(loop.stop)
        thread.join(_CALL_TIMEOUT_S)
        self.security.close()

    def __enter__(self) -> ReferenceCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` to give clients as ``bootstrap.servers``."""
        return self._server.bootstrap_servers

    def client_config(
        self, user: str | None = None, mechanism: str | None = None, listener: str | None = None
    ) -> dict[str, str]:
        """The settings a client (confluent-kafka or kconsumer) needs to connect: the bootstrap
        address, ``security.protocol``, the CA to trust for TLS (and the client certificate and
        key when the listener requires one), and for SASL `user`'s credentials (default: the
        first user) with `mechanism` (default: the first enabled; OAUTHBEARER gets librdkafka's
        unsecured-JWT settings). `listener="PLAINTEXT"`: the plaintext listener's address only."""
        if listener is not None and listener != self.config.security_protocol:
            return {"bootstrap.servers": self._server.bootstrap_for(listener)}
        return {"bootstrap.servers": self.bootstrap_servers, **self.security.client_settings(user, mechanism)}

    def connections(self) -> list[ConnectionInfo]:
        """Every client connection open now (peer, client id, security protocol, principal,
        SASL authentications): tests prove with it that every connection was secured."""
        return self._call(lambda _broker: self._server.connection_security())

    def accepted_connections(self) -> int:
        """Client connections accepted since start (tests count reconnect attempts with it)."""
        return self._call(lambda _broker: self._server.accepted_connections)

    def set_password(self, user: str, password: str) -> None:
        """Change (or add) a SASL user's password: later authentications need the new one."""
        sasl = self.config.sasl
        if sasl is None:
            raise ValueError("this cluster's listener does not use SASL")
        self._call(lambda _broker: sasl.users.set_password(user, password))

    @property
    def port(self) -> int:
        """The port the broker listens on."""
        return self._server.port

    # -- plumbing ------------------------------------------------------------------------------

    def _call(self, fn: Callable[[Broker], T]) -> T:
        """Run `fn(broker)` on the server's loop and return its result (or raise its exception)."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the cluster is not running (use it as a context manager or call start())")
        if threading.current_thread() is self._thread:
            return fn(self._server.broker)
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(self._server.broker))
            except BaseException as exc:
                future.set_exception(exc)

        loop.call_soon_threadsafe(run)
        return future.result(_CALL_TIMEOUT_S)

    # -- topics ----------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1) -> Uuid:
        """Create a topic; returns its (random) topic id. Raises `KafkaApiError`
        (TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_TOPIC_EXCEPTION)."""
        request = CreateTopicsRequest(
            topics=[CreatableTopic(name=name, num_partitions=partitions, replication_factor=-1)]
        )
        response = self._call(lambda broker: broker.call(request, 7))
        assert isinstance(response, CreateTopicsResponse)
        result = response.topics[0]
        if result.error_code:
            raise error_for(result.error_code, result.error_message)
        return result.topic_id

    def delete_topic(self, name: str) -> None:
        """Delete a topic (its committed offsets go too). Raises `KafkaApiError` if unknown."""
        response = self._call(lambda broker: broker.call(DeleteTopicsRequest(topic_names=[name]), 5))
        assert isinstance(response, DeleteTopicsResponse)
        result = response.responses[0]
        if result.error_code:
            raise error_for(result.error_code, result.error_message)

    def create_partitions(self, name: str, total: int) -> None:
        """Grow a topic to `total` partitions. Raises `KafkaApiError` (INVALID_PARTITIONS if not growing)."""
        request = CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name=name, count=total, assignments=None)]
        )
        response = self._call(lambda broker: broker.call(request, 3))
        assert isinstance(response, CreatePartitionsResponse)
        result = response.results[0]
        if result.error_code:
            raise error_for(result.error_code, result.error_message)

    def topics(self) -> dict[str, int]:
        """Every topic's partition count, by name."""
        return self._call(lambda broker: {t.name: len(t.partitions) for t in broker.topics})

    def topic_id(self, name: str) -> Uuid:
        """The id of topic `name` (KeyError if it does not exist)."""
        return self._call(lambda broker: broker.topics.by_name[name].topic_id)

    def watermarks(self, topic: str) -> list[tuple[int, int]]:
        """(log start offset, high watermark) of each partition of `topic`."""
        return self._call(
            lambda broker: [
                (p.log_start_offset, p.high_watermark) for p in broker.topics.by_name[topic].partitions
            ]
        )

    # -- records -------------------------------------------------------------------------------

    def produce(
        self,
        topic: str,
        values: Iterable[Value],
        key: Value = None,
        partition: int | None = None,
    ) -> list[int]:
        """Append one record per value (bytes or str, None for a null value) with `key`, to
        `partition` or, when None, to the topic's partitions in turn. Returns each record's offset,
        in the order of `values`. Raises `KafkaApiError` for an unknown topic or partition."""
        encoded = [as_bytes(v) for v in values]
        if not encoded:
            return []
        key_bytes = as_bytes(key)

        def append(broker: Broker) -> list[int]:
            known = broker.topics.get(topic)
            if known is None:
                raise error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {topic}")
            by_partition = self._round_robin.plan(topic, len(known.partitions), len(encoded), partition)
            now = int(time.time() * 1000)
            offsets = [0] * len(encoded)
            for target, positions in by_partition.items():
                batch = records.build_batch((key_bytes, encoded[i], (), now) for i in positions)
                request = ProduceRequest(
                    acks=ACKS_ALL,
                    timeout_ms=_CALL_TIMEOUT_S * 1000,
                    topic_data=[
                        TopicProduceData(
                            name=topic, partition_data=[PartitionProduceData(index=target, records=batch)]
                        )
                    ],
                )
                response = broker.call(request, 12)
                assert isinstance(response, ProduceResponse)
                result = response.responses[0].partition_responses[0]
                if result.error_code:
                    raise error_for(result.error_code, result.error_message)
                for delta, position in enumerate(positions):
                    offsets[position] = result.base_offset + delta
            return offsets

        return self._call(append)

    def records(self, topic: str, partition: int) -> list[records.Record]:
        """Every retained record of a partition, decoded (offset, timestamp, key, value, headers)."""
        chunks = self._call(
            lambda broker: [
                bytes(chunk) for _base, chunk in broker.topics.by_name[topic].partitions[partition].batches()
            ]
        )
        return records.decode_records(b"".join(chunks))

    # -- groups ----------------------------------------------------------------------------------

    def describe_group(self, group_id: str) -> GroupDescription | None:
        """The consumer group as the coordinator holds it now, or None if there is no such group."""

        def describe(broker: Broker) -> GroupDescription | None:
            coordinator = broker.coordinators.of_group(group_id)
            group = coordinator.group(group_id)
            if group is None:
                return None
            names = {tid: t.name for tid, t in coordinator.image.topics_by_id.items()}
            members = {m.member_id: _member(group, m, names) for m in group.members.values()}
            return GroupDescription(
                group_id=group_id,
                epoch=group.group_epoch,
                state=group.state().value,
                assignment_epoch=group.assignment_epoch,
                members=dict(sorted(members.items())),
                coordinator=broker.nodes.coordinator_of(group_id),
            )

        return self._call(describe)

    def worker_group(self, group_id: str) -> WorkerGroupState | None:
        """The worker group as the coordinator holds it now (an immutable value), or None."""
        return self._call(
            lambda broker: broker.coordinators.of_group(group_id).state.worker_groups.get(group_id)
        )

    def describe_classic_group(self, group_id: str) -> ClassicGroupDescription | None:
        """The classic group as DescribeGroups shows it (state, protocol, members with their
        metadata for the chosen protocol and assignment), or None if there is no such group.
        As on Apache Kafka, the protocol and the members' metadata are shown while the group is
        Stable only (empty during a rebalance)."""
        group = self.classic_group_state(group_id)
        if group is None or group.state.value == "Dead":
            return None
        protocol = (group.protocol_name or "") if group.state.value == "Stable" else ""
        members = {
            m.member_id: ClassicMemberDescription(
                member_id=m.member_id,
                instance_id=m.instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                protocol_metadata=m.metadata(protocol),
                assignment=m.assignment,
            )
            for m in group.members.values()
        }
        return ClassicGroupDescription(
            group_id=group_id,
            state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_name=protocol,
            members=dict(sorted(members.items())),
        )

    def classic_group_state(self, group_id: str) -> ClassicGroup | None:
        """The classic group as the reference coordinator holds it now (its inner, immutable
        state: generation, leader, pending members, ...), or None."""
        return self._call(
            lambda broker: broker.coordinators.of_group(group_id).state.classic_groups.get(group_id)
        )

    def list_groups(self) -> list[str]:
        """The ids of every consumer group."""
        return self._call(
            lambda broker: sorted(g for _p, shard in broker.coordinators.items() for g in shard.state.groups)
        )

    def delete_group(self, group_id: str) -> None:
        """Delete an empty group and its offsets, as DeleteGroups does. Raises `KafkaApiError`
        (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP)."""
        request = DeleteGroupsRequest(groups_names=[group_id])

        def delete(broker: Broker) -> DeleteGroupsResponse:
            partition = broker.coordinators.partition_of(group_id)
            result = broker.coordinators.handle(partition, request, 2, "in-process", "/in-process")
            assert isinstance(result, DeleteGroupsResponse)
            return result

        code = self._call(delete).results[0].error_code
        if code:
            raise error_for(code, f"group {group_id!r}")

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets by (topic name, partition)."""

        def read(broker: Broker) -> dict[tuple[str, int], int]:
            stored = broker.coordinators.of_group(group_id).state.offsets.get(group_id, {})
            return {key: value.offset for key, value in sorted(stored.items())}

        return self._call(read)

    # -- faults ----------------------------------------------------------------------------------

    def inject_error(self, api_key: int, error_code: int, count: int = 1) -> None:
        """Answer the next `count` requests of `api_key` (from any client) with `error_code`,
        without processing them. The code goes where that API carries errors (every partition of
        a Produce, the group of an OffsetFetch, the top-level code of a heartbeat, ...)."""
        self._call(lambda broker: broker.faults.inject_error(api_key, error_code, count))

    def delay_responses(self, api_key: int, delay_ms: int, count: int = FOREVER) -> None:
        """Process the next `count` requests of `api_key` at once but send their responses
        `delay_ms` later (FOREVER, the default: until `clear_faults`). Later requests on the same
        connection wait behind a delayed one, as on a slow Kafka broker."""
        self._call(lambda broker: broker.faults.delay_responses(api_key, delay_ms, count))

    def drop_responses(self, api_key: int, count: int = 1) -> None:
        """Process the next `count` requests of `api_key`, then close their connection instead of
        answering: a lost response (the client cannot tell whether the request took effect)."""
        self._call(lambda broker: broker.faults.drop_responses(api_key, count))

    def clear_faults(self, api_key: int | None = None) -> None:
        """Forget pending injected errors, delays and drops (of one API, or all)."""
        self._call(lambda broker: broker.faults.clear(api_key))

    def fail_over_coordinator(self) -> None:
        """Replace the group coordinator with a fresh one that replays the old one's record log.
        Each connection's next group request is answered NOT_COORDINATOR once (the client then
        looks the coordinator up again and retries), as after a real coordinator move."""
        self._call(lambda broker: broker.fail_over_coordinator())

    def drop_connections(self, node_id: int | None = None) -> int:
        """Close every client connection (of broker `node_id`, or of all) now; returns how many.
        Clients reconnect by themselves."""
        return self._call(lambda broker: self._server.drop_connections(node_id))


def _by_name(
    assignment: Mapping[Uuid, Iterable[int]], names: Mapping[Uuid, str]
) -> dict[str, tuple[int, ...]]:
    out = {}
    for topic_id, partitions in assignment.items():
        parts = tuple(sorted(partitions))
        if parts:
            out[names.get(topic_id, str(topic_id))] = parts
    return dict(sorted(out.items()))


def _member(
    group: ConsumerGroup, member: ConsumerGroupMember, names: Mapping[Uuid, str]
) -> MemberDescription:
    metadata = member.metadata
    current = member.current
    return MemberDescription(
        member_id=member.member_id,
        instance_id=metadata.instance_id,
        member_epoch=current.member_epoch,
        state=current.state.name.lower(),
        assignment=_by_name(current.assigned, names),
        pending_revocation=_by_name(current.pending_revocation, names),
        target=_by_name(group.target_of(member.member_id).partitions, names),
        client_id=metadata.client_id,
        client_host=metadata.client_host,
        subscribed_topics=tuple(metadata.subscribed_topic_names),
        subscribed_regex=metadata.subscribed_topic_regex,
    )
