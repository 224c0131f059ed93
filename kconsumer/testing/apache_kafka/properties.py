"""The ``server.properties`` of each node of an `ApacheKafka` cluster: KRaft in combined mode, the
listeners (the clients', a PLAINTEXT one for the harness, the controller's), the group
coordinator's timers for fast tests, and the listener's TLS and SASL settings.

Every key is a documented Kafka broker setting; `broker_config` entries win over these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .node import NodePorts

HOST = "127.0.0.1"
#: The clients' listener, the harness's (PLAINTEXT: admin helpers, inter-broker traffic when the
#: clients' listener is secured) and the KRaft controllers'.
CLIENT, HARNESS, CONTROLLER = "CLIENT", "HARNESS", "CONTROLLER"

#: Kafka's login modules per SASL mechanism (`ApacheKafka` stores SCRAM credentials at format
#: time; PLAIN users are listed in the JAAS line; OAUTHBEARER accepts unsecured JWTs).
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "OAUTHBEARER": "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
}
SASL_MECHANISMS = tuple(_LOGIN_MODULES)


@dataclass(frozen=True)
class GroupTimers:
    """The group coordinator's settings a test chooses (None: Kafka's default)."""

    heartbeat_interval_ms: int | None = None
    session_timeout_ms: int | None = None
    assignment_interval_ms: int | None = None
    initial_rebalance_delay_ms: int | None = 0
    max_group_size: int | None = None
    assignors: tuple[str, ...] | None = None
    migration_policy: str | None = None
    #: ``group.coordinator.rebalance.protocols`` (None: Kafka's default; the key is deprecated
    #: in 4.x, so it is written only when a test narrows it, e.g. to ``("classic",)``).
    group_protocols: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ListenerSecurity:
    """The clients' listener: its protocol and, for TLS and SASL, what it needs."""

    protocol: str = "PLAINTEXT"
    #: PEM files: the server's certificate and key, and the CA clients' certificates must chain
    #: to (mutual TLS) when `client_auth`.
    certificate: Path | None = None
    key: Path | None = None
    ca: Path | None = None
    client_auth: bool = False
    mechanisms: tuple[str, ...] = ()
    users: Mapping[str, str] = field(default_factory=dict)
    max_reauth_ms: int | None = None

    @property
    def secured(self) -> bool:
        return self.protocol != "PLAINTEXT"


def node_properties(
    node_id: int,
    ports: Mapping[int, NodePorts],
    log_dir: Path,
    *,
    timers: GroupTimers,
    security: ListenerSecurity,
    auto_create_topics: bool,
    default_partitions: int,
    broker_config: Mapping[str, str],
) -> dict[str, str]:
    """Every setting of node `node_id` of a cluster whose nodes listen on `ports`."""
    mine = ports[node_id]
    brokers = len(ports)
    replicas = str(min(brokers, 3))
    listeners = {CLIENT: mine.client, CONTROLLER: mine.controller}
    protocols = {CLIENT: security.protocol, CONTROLLER: "PLAINTEXT"}
    if security.secured:
        listeners[HARNESS] = mine.harness
        protocols[HARNESS] = "PLAINTEXT"
    properties: dict[str, str] = {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": ",".join(f"{n}@{HOST}:{p.controller}" for n, p in sorted(ports.items())),
        "controller.listener.names": CONTROLLER,
        "listeners": ",".join(f"{name}://{HOST}:{port}" for name, port in listeners.items()),
        "advertised.listeners": ",".join(
            f"{name}://{HOST}:{port}" for name, port in listeners.items() if name != CONTROLLER
        ),
        "listener.security.protocol.map": ",".join(f"{n}:{p}" for n, p in protocols.items()),
        "inter.broker.listener.name": HARNESS if security.secured else CLIENT,
        "log.dirs": str(log_dir),
        # Internal topics: replicated over every node (up to 3) so a stopped broker's groups,
        # transactions and partitions fail over; few partitions so they are created quickly.
        "offsets.topic.replication.factor": replicas,
        "offsets.topic.num.partitions": str(max(4, 3 * brokers)),
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": str(max(4, 3 * brokers)),
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": "1",
        "default.replication.factor": replicas,
        "min.insync.replicas": "1",
        "num.partitions": str(default_partitions),
        "auto.create.topics.enable": str(auto_create_topics).lower(),
        # A stopped or killed broker is noticed within seconds, not Kafka's 9 s.
        "broker.heartbeat.interval.ms": "500",
        "broker.session.timeout.ms": "3000",
        # Fewer threads than a production broker: tests share two cores with the clients.
        "num.network.threads": "2",
        "num.io.threads": "4",
        "num.recovery.threads.per.data.dir": "1",
        "background.threads": "2",
        "group.coordinator.threads": "1",
        # Regular expressions resolved again as soon as Kafka allows (its minimum: 10 s).
        "group.consumer.regex.refresh.interval.ms": "10000",
        # Short timers may be chosen by tests and by clients (classic session timeouts).
        "group.min.session.timeout.ms": "100",
    }
    properties.update(_group_settings(timers))
    properties.update(_listener_security(security))
    properties.update(broker_config)
    return properties


def _group_settings(timers: GroupTimers) -> dict[str, str]:
    settings: dict[str, str] = {}
    if timers.group_protocols is not None:
        settings["group.coordinator.rebalance.protocols"] = ",".join(timers.group_protocols)
    if timers.heartbeat_interval_ms is not None:
        settings["group.consumer.heartbeat.interval.ms"] = str(timers.heartbeat_interval_ms)
        settings["group.consumer.min.heartbeat.interval.ms"] = str(min(timers.heartbeat_interval_ms, 100))
    if timers.session_timeout_ms is not None:
        settings["group.consumer.session.timeout.ms"] = str(timers.session_timeout_ms)
        settings["group.consumer.min.session.timeout.ms"] = str(min(timers.session_timeout_ms, 1000))
        settings["group.consumer.max.session.timeout.ms"] = str(max(timers.session_timeout_ms, 60000))
    if timers.assignment_interval_ms is not None:
        settings["group.consumer.assignment.interval.ms"] = str(timers.assignment_interval_ms)
    if timers.initial_rebalance_delay_ms is not None:
        settings["group.initial.rebalance.delay.ms"] = str(timers.initial_rebalance_delay_ms)
    if timers.max_group_size is not None:
        settings["group.consumer.max.size"] = str(timers.max_group_size)
    if timers.assignors is not None:
        settings["group.consumer.assignors"] = ",".join(timers.assignors)
    if timers.migration_policy is not None:
        settings["group.consumer.migration.policy"] = timers.migration_policy
    return settings


def _listener_security(security: ListenerSecurity) -> dict[str, str]:
    prefix = f"listener.name.{CLIENT.lower()}."
    settings: dict[str, str] = {}
    if security.protocol.endswith("SSL"):
        assert security.certificate is not None and security.key is not None
        keystore = security.certificate.with_name("server-keystore.pem")
        keystore.write_text(security.key.read_text() + security.certificate.read_text())
        settings[prefix + "ssl.keystore.type"] = "PEM"
        settings[prefix + "ssl.keystore.location"] = str(keystore)
        if security.client_auth:
            assert security.ca is not None
            settings[prefix + "ssl.truststore.type"] = "PEM"
            settings[prefix + "ssl.truststore.location"] = str(security.ca)
            settings[prefix + "ssl.client.auth"] = "required"
    if security.protocol.startswith("SASL"):
        settings[prefix + "sasl.enabled.mechanisms"] = ",".join(security.mechanisms)
        for mechanism in security.mechanisms:
            settings[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = _jaas(mechanism, security.users)
        if security.max_reauth_ms is not None:
            settings[prefix + "connections.max.reauth.ms"] = str(security.max_reauth_ms)
    return settings


def _jaas(mechanism: str, users: Mapping[str, str]) -> str:
    module = _LOGIN_MODULES.get(mechanism)
    if module is None:
        raise ValueError(f"sasl_mechanisms: one of {', '.join(SASL_MECHANISMS)}, got {mechanism!r}")
    options = ""
    if mechanism == "PLAIN":
        options = "".join(f' user_{name}="{password}"' for name, password in users.items())
    return f"{module} required{options};"


def scram_credentials(security: ListenerSecurity) -> list[str]:
    """The storage tool's ``--add-scram`` arguments for every user and SCRAM mechanism."""
    return [
        f"{mechanism}=[name={name},password={password}]"
        for mechanism in security.mechanisms
        if mechanism.startswith("SCRAM-")
        for name, password in security.users.items()
    ]


def check_mechanisms(mechanisms: Iterable[str]) -> tuple[str, ...]:
    """The mechanisms, upper-cased; ValueError naming an unknown one."""
    chosen = tuple(m.upper() for m in mechanisms)
    for mechanism in chosen:
        if mechanism not in _LOGIN_MODULES:
            raise ValueError(f"sasl_mechanisms: one of {', '.join(SASL_MECHANISMS)}, got {mechanism!r}")
    return chosen
