"""`ApacheKafka`: a real Apache Kafka cluster (KRaft, each node broker and controller in one JVM)
started from the official jars, with the surface of `ReferenceCluster` wherever Kafka allows it,
so a test can run against either::

    with ApacheKafka(brokers=1, heartbeat_interval_ms=500, session_timeout_ms=6000) as kafka:
        kafka.create_topic("orders", partitions=6)
        kafka.produce("orders", [b"a", b"b"])
        consumer = kconsumer.Consumer({**kafka.client_config(), "group.id": "g"})
        print(kafka.describe_group("g"))

Where the jars and Java come from: `kconsumer.testing.apache_kafka.distribution`. Each node's
configuration: `kconsumer.testing.apache_kafka.properties`. The admin helpers speak the Kafka
protocol to a PLAINTEXT listener of the harness's own, so they work whatever security the
clients' listener has.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import tempfile
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from ...errors import ErrorCode, error_for
from ...protocol import records
from ...protocol.uuid import Uuid
from ..descriptions import ClassicGroupDescription, GroupDescription
from ..partitioner import Value, as_bytes, encode_values
from ..secured import ClusterSecurity
from .admin import KafkaAdmin
from .distribution import DEFAULT_VERSION, ApacheKafkaUnavailable, Distribution, locate
from .node import KafkaNode, NodePorts, run_formats
from .properties import (
    HOST,
    GroupTimers,
    ListenerSecurity,
    check_mechanisms,
    node_properties,
    scram_credentials,
)

_START_TIMEOUT_S = 120.0


class ApacheKafka:
    """An Apache Kafka cluster of `brokers` nodes on this machine; see the module docstring.

    The keyword options mean what they mean for `ReferenceCluster` (group timers, assignors,
    group size, auto-creation, security); `broker_config` sets any other broker setting (it wins
    over the harness's). `version` picks the Kafka release resolved from Maven Central (4.x),
    `home` an existing installation instead (``KCONSUMER_KAFKA_HOME`` does the same).
    """

    def __init__(
        self,
        *,
        version: str = DEFAULT_VERSION,
        home: str | os.PathLike[str] | None = None,
        brokers: int = 1,
        heartbeat_interval_ms: int | None = None,
        session_timeout_ms: int | None = None,
        assignment_interval_ms: int | None = None,
        assignors: Iterable[str] | None = None,
        auto_create_topics: bool = False,
        max_group_size: int | None = None,
        default_partitions: int = 1,
        initial_rebalance_delay_ms: int | None = 0,
        migration_policy: str | None = None,
        group_protocols: Iterable[str] | None = None,
        security_protocol: str = "PLAINTEXT",
        ssl_client_auth: bool = False,
        sasl_mechanisms: Iterable[str] = ("SCRAM-SHA-512",),
        users: Mapping[str, str] | None = None,
        max_reauth_ms: int | None = None,
        broker_config: Mapping[str, object] | None = None,
        jvm_options: Sequence[str] = (),
        directory: str | os.PathLike[str] | None = None,
    ) -> None:
        if brokers < 1:
            raise ValueError(f"brokers: at least 1, got {brokers}")
        self.version = version
        self.home = home
        self.timers = GroupTimers(
            heartbeat_interval_ms=heartbeat_interval_ms,
            session_timeout_ms=session_timeout_ms,
            assignment_interval_ms=assignment_interval_ms,
            initial_rebalance_delay_ms=initial_rebalance_delay_ms,
            max_group_size=max_group_size,
            assignors=None if assignors is None else tuple(assignors),
            migration_policy=migration_policy,
            group_protocols=None if group_protocols is None else tuple(group_protocols),
        )
        self.ssl_client_auth = ssl_client_auth
        self.sasl_mechanisms = check_mechanisms(sasl_mechanisms)
        self.users = dict(users or {})
        self.max_reauth_ms = max_reauth_ms
        self.security_protocol = security_protocol.upper()
        self.auto_create_topics = auto_create_topics
        self.default_partitions = default_partitions
        self.broker_config = {
            key: str(value).lower() if isinstance(value, bool) else str(value)
            for key, value in (broker_config or {}).items()
        }
        self.jvm_options = tuple(jvm_options)
        self._directory_option = directory
        self.node_count = brokers
        self.security: ClusterSecurity | None = None
        self.distribution: Distribution | None = None
        #: Seconds from `start()` until every broker answered (resolving jars excluded).
        self.startup_seconds: float | None = None
        self._nodes: dict[int, KafkaNode] = {}
        self._ports: dict[int, NodePorts] = {}
        self._directory: Path | None = None
        self._owns_directory = False
        self._admin = KafkaAdmin(self._harness_addresses)

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> ApacheKafka:
        """Resolve the jars (Maven, once), format every node, start them and wait until each
        broker answers. Returns self. `ApacheKafkaUnavailable` when Java or the jars are missing
        or a node does not start (with the end of its log)."""
        if self._nodes:
            raise RuntimeError("the cluster is already started")
        distribution = self.distribution or locate(self.version, self.home)
        self.distribution = distribution
        started = time.monotonic()
        if self._directory_option is None:
            self._directory = Path(tempfile.mkdtemp(prefix="kconsumer-kafka-"))
            self._owns_directory = True
        else:
            self._directory = Path(self._directory_option)
            self._directory.mkdir(parents=True, exist_ok=True)
        try:
            self._start_nodes(distribution, self._directory)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started
        return self

    def _start_nodes(self, distribution: Distribution, directory: Path) -> None:
        self.security = ClusterSecurity.build(
            self.security_protocol,
            ssl_client_auth=self.ssl_client_auth,
            sasl_mechanisms=self.sasl_mechanisms,
            users=self.users,
        )
        certificates = self.security.certificates
        listener = ListenerSecurity(
            protocol=self.security_protocol,
            certificate=None if certificates is None else certificates.server_certificate,
            key=None if certificates is None else certificates.server_key,
            ca=None if certificates is None else certificates.ca,
            client_auth=self.ssl_client_auth,
            mechanisms=self.sasl_mechanisms if self.security_protocol.startswith("SASL") else (),
            users=self.users,
            max_reauth_ms=self.max_reauth_ms,
        )
        free = _free_ports(3 * self.node_count)
        self._ports = {
            n: NodePorts(client=free[3 * i], harness=free[3 * i + 1], controller=free[3 * i + 2])
            for i, n in enumerate(range(1, self.node_count + 1))
        }
        if not listener.secured:
            self._ports = {n: NodePorts(p.client, p.client, p.controller) for n, p in self._ports.items()}
        for node_id in self._ports:
            node_directory = directory / f"node-{node_id}"
            properties = node_properties(
                node_id,
                self._ports,
                node_directory / "data",
                timers=self.timers,
                security=listener,
                auto_create_topics=self.auto_create_topics,
                default_partitions=self.default_partitions,
                broker_config=self.broker_config,
            )
            node = KafkaNode(node_id, node_directory, distribution, properties, jvm_options=self.jvm_options)
            node.write_config()
            self._nodes[node_id] = node
        run_formats(list(self._nodes.values()), _cluster_id(), scram_credentials(listener))
        for node in self._nodes.values():
            node.start()
        self._wait_ready(set(self._nodes), _START_TIMEOUT_S)

    def _wait_ready(self, expected: set[int], timeout: float) -> None:
        """Wait until every up node answers and lists exactly the `expected` brokers."""
        deadline = time.monotonic() + timeout
        while True:
            for node in self._nodes.values():
                if node.node_id in expected and not node.running:
                    raise ApacheKafkaUnavailable(
                        f"Apache Kafka node {node.node_id} exited with status {node.exit_status()} "
                        f"while starting:\n{node.log_tail()}"
                    )
            try:
                if all(set(self._admin.broker_ids(n)) == expected for n in expected):
                    return
            except (OSError, Exception) as exc:  # not listening yet, or still electing
                last: object = exc
            else:
                last = "not every broker is registered yet"
            if time.monotonic() > deadline:
                tails = "\n".join(self._nodes[n].log_tail(15) for n in sorted(expected))
                raise ApacheKafkaUnavailable(
                    f"Apache Kafka did not become ready in {timeout:.0f} s ({last}):\n{tails}"
                )
            time.sleep(0.1)

    def stop(self) -> None:
        """Stop every node at once (no controlled shutdown: the data is thrown away) and delete
        the cluster's directory if it made one. Idempotent."""
        self._admin.close()
        for node in self._nodes.values():
            node.stop(graceful=False)
        self._nodes.clear()
        if self._owns_directory and self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None
        if self.security is not None:
            self.security.close()
            self.security = None

    def __enter__(self) -> ApacheKafka:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- addresses and client settings -----------------------------------------------------------

    def _up(self) -> list[int]:
        return [n for n, node in sorted(self._nodes.items()) if node.running]

    def _harness_addresses(self) -> dict[int, tuple[str, int]]:
        return {n: (HOST, self._ports[n].harness) for n in self._up()}

    @property
    def bootstrap_servers(self) -> str:
        """``host:port,...`` of every node's clients' listener, for ``bootstrap.servers``."""
        if not self._ports:
            raise RuntimeError("the cluster is not running (use it as a context manager or call start())")
        return ",".join(f"{HOST}:{p.client}" for _n, p in sorted(self._ports.items()))

    def client_config(
        self, user: str | None = None, mechanism: str | None = None, listener: str | None = None
    ) -> dict[str, str]:
        """What a client (confluent-kafka, kconsumer, ...) needs to connect: the bootstrap
        address and the security settings, as `ReferenceCluster.client_config`.
        `listener="PLAINTEXT"`: the harness's plaintext listener instead."""
        if listener is not None and listener.upper() != self.security_protocol:
            if listener.upper() != "PLAINTEXT":
                raise ValueError(f"listener: PLAINTEXT or {self.security_protocol}, got {listener!r}")
            return {
                "bootstrap.servers": ",".join(f"{HOST}:{p.harness}" for _n, p in sorted(self._ports.items()))
            }
        security = self.security
        settings = {} if security is None else security.client_settings(user, mechanism)
        return {"bootstrap.servers": self.bootstrap_servers, **settings}

    @property
    def port(self) -> int:
        """The clients' port of the first node."""
        return self._ports[min(self._ports)].client

    def node_log(self, node_id: int = 1, lines: int = 40) -> str:
        """The end of a node's log."""
        return self._nodes[node_id].log_tail(lines)

    # -- topics and records ------------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int = 1, *, config: Mapping[str, str] | None = None
    ) -> Uuid:
        """Create a topic (returned once every partition has a leader); its id. Raises
        `KafkaApiError` (TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_TOPIC_EXCEPTION)."""
        return self._admin.create_topic(name, partitions, config=config)

    def delete_topic(self, name: str) -> None:
        """Delete a topic (returned once Metadata no longer lists it)."""
        self._admin.delete_topic(name)

    def create_partitions(self, name: str, total: int) -> None:
        """Grow a topic to `total` partitions."""
        self._admin.create_partitions(name, total)

    def topics(self) -> dict[str, int]:
        """Every topic's partition count, by name (Kafka's internal topics left out)."""
        return self._admin.topics()

    def topic_id(self, name: str) -> Uuid:
        """The id of topic `name` (KeyError if it does not exist)."""
        return self._admin.topic_id(name)

    def watermarks(self, topic: str) -> list[tuple[int, int]]:
        """(log start offset, high watermark) of each partition of `topic`."""
        return self._admin.watermarks(topic)

    def produce(
        self, topic: str, values: Iterable[Value], key: Value = None, partition: int | None = None
    ) -> list[int]:
        """Append one record per value with `key`, to `partition` or, when None, to the topic's
        partitions in turn; each record's offset, in the order of `values`."""
        if topic not in self._admin.topics():
            raise error_for(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {topic}")
        return self._admin.produce(topic, encode_values(values), as_bytes(key), partition)

    def records(self, topic: str, partition: int) -> list[records.Record]:
        """Every retained record of a partition, decoded."""
        return self._admin.records(topic, partition)

    # -- groups ------------------------------------------------------------------------------------

    def describe_group(self, group_id: str) -> GroupDescription | None:
        """The consumer group as Kafka's ConsumerGroupDescribe shows it, or None. Kafka does not
        show partitions pending revocation: a member's `pending_revocation` is empty and its `state`
        ``stable`` (at the assignment epoch, holding its target) or ``reconciling``."""
        return self._admin.describe_group(group_id)

    def describe_classic_group(self, group_id: str) -> ClassicGroupDescription | None:
        """The classic group as DescribeGroups shows it, or None (no such group, or a group of
        the consumer protocol)."""
        return self._admin.describe_classic_group(group_id)

    def list_groups(self) -> list[str]:
        """The ids of every consumer group (group type ``consumer``)."""
        return self._admin.list_groups(self._up(), types=("consumer",))

    def list_all_groups(self) -> list[str]:
        """The ids of every group, whatever its type."""
        return self._admin.list_groups(self._up())

    def committed(self, group_id: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets by (topic name, partition)."""
        return self._admin.committed(group_id)

    def delete_group(self, group_id: str) -> None:
        """Delete an empty group and its offsets (DeleteGroups), waiting up to two minutes while
        members that left or crashed are still being removed."""
        self._admin.delete_group(group_id)

    def reset(self) -> None:
        """Every broker running again, and every group and topic deleted: a shared cluster made
        fresh for the next test."""
        self.start_stopped_brokers()
        for group in self.list_all_groups():
            self.delete_group(group)
        for topic in self.topics():
            self._admin.delete_topic(topic)

    # -- brokers -----------------------------------------------------------------------------------

    def brokers(self) -> list[int]:
        """The node ids of every broker (1..N)."""
        return sorted(self._nodes)

    def brokers_up(self) -> list[int]:
        """The node ids of the brokers that are running."""
        return self._up()

    def coordinator_node(self, group_id: str) -> int:
        """The node id of the broker coordinating `group_id` now."""
        return self._admin.coordinator(group_id)

    def leader(self, topic: str, partition: int) -> int:
        """The node id of the broker leading the partition now."""
        return self._admin.partition_leaders(topic)[partition]

    def in_sync_replicas(self, topic: str) -> list[list[int]]:
        """Each partition's in-sync replicas (node ids, sorted), by partition index."""
        return self._admin.in_sync_replicas(topic)

    def stop_broker(self, node_id: int, *, graceful: bool = True) -> None:
        """Stop one broker: gracefully (Kafka's controlled shutdown moves its partitions'
        leadership first), or, with `graceful=False`, killed (the controller notices within
        ``broker.session.timeout.ms``, 3 s here). Returns once the other brokers no longer list it."""
        if node_id not in self._nodes:
            raise ValueError(f"no broker {node_id} (brokers: {self.brokers()})")
        if len(self._up()) <= 1:
            raise ValueError("cannot stop the last running broker")
        self._admin.forget(node_id)
        self._nodes[node_id].stop(graceful=graceful)
        self._wait_ready(set(self._up()), _START_TIMEOUT_S)

    def start_stopped_brokers(self) -> list[int]:
        """Start every broker that is not running (a test stopped it and did not get to start it
        again, or its JVM exited); returns their node ids."""
        stopped = [node_id for node_id in self.brokers() if node_id not in self._up()]
        for node_id in stopped:
            self.start_broker(node_id)
        return stopped

    def start_broker(self, node_id: int) -> None:
        """Start a stopped broker again; returns once every broker lists it and the running
        brokers' replicas of every partition are in sync again."""
        node = self._nodes[node_id]
        if node.running:
            raise ValueError(f"broker {node_id} is running")
        node.start()
        running = set(self._up())
        self._wait_ready(running, _START_TIMEOUT_S)
        self._admin.wait_in_sync(running, _START_TIMEOUT_S)


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            probe = socket.socket()
            probe.bind((HOST, 0))
            sockets.append(probe)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for probe in sockets:
            probe.close()


def _cluster_id() -> str:
    """A random cluster id as Kafka writes them (base64url of 16 bytes, not starting with '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
