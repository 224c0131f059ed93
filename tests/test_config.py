"""ConsumerConfig.from_dict: every key, every rule, every error."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kconsumer import AssignmentSpec, AssignorMetadata, GroupAssignment, PartitionAssignor
from kconsumer.assignment.announcements import AnnouncedAssignor
from kconsumer.client.config import PASSTHROUGH_KEYS, REFUSED_KEYS, ConsumerConfig
from kconsumer.client.member import OffsetReset
from kconsumer.errors import ConfigError

BASE = {"bootstrap.servers": "localhost:9092"}


def make(**extra: Any) -> ConsumerConfig:
    return ConsumerConfig.from_dict({**BASE, **{k.replace("__", "."): v for k, v in extra.items()}})


def error(config: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        ConsumerConfig.from_dict(config)
    return info.value


class StickyAssignor:
    name = "sticky"
    minimum_version = 0
    maximum_version = 2


class NeedsArguments:
    def __init__(self, weight: int) -> None:
        self.name = "weighted"
        self.minimum_version = 0
        self.maximum_version = 0


class Versioned:
    def __init__(self, name: str, low: Any, high: Any) -> None:
        self.name = name
        self.minimum_version = low
        self.maximum_version = high


class Holder:
    instance = Versioned("held", 0, 0)


# -- defaults and required keys ----------------------------------------------------------------------


def test_defaults() -> None:
    config = ConsumerConfig.from_dict(BASE)
    assert config.bootstrap_servers == "localhost:9092"
    assert (config.group_id, config.group_protocol, config.group_instance_id) == (None, "consumer", None)
    assert (config.client_id, config.client_rack) == ("kconsumer", None)
    assert (config.group_remote_assignor, config.group_local_assignors) == (None, ())
    assert config.max_poll_interval_ms == 300_000
    assert (config.enable_auto_commit, config.auto_commit_interval_ms) == (True, 5_000)
    assert config.auto_offset_reset is OffsetReset.LATEST
    assert (config.retry_backoff_ms, config.retry_backoff_max_ms) == (100, 1_000)
    assert (config.request_timeout_ms, config.socket_connection_setup_timeout_ms) == (30_000, 10_000)
    assert config.on_commit is None and dict(config.librdkafka_passthrough) == {}


def test_config_is_frozen() -> None:
    config = make()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.group_id = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.librdkafka_passthrough["debug"] = "all"  # type: ignore[index]


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({}, "bootstrap.servers"),
        ({"bootstrap.servers": ""}, "bootstrap.servers"),
        ({"bootstrap.servers": "a:1,,b:2"}, "bootstrap.servers"),
        ({"bootstrap.servers": ["a:1"]}, "bootstrap.servers"),
    ],
)
def test_bootstrap_servers_is_required_and_checked(config: dict[str, Any], key: str) -> None:
    assert error(config).key == key


def test_bootstrap_servers_entries_are_trimmed() -> None:
    assert ConsumerConfig.from_dict({"bootstrap.servers": " a:1 , b:2"}).bootstrap_servers == "a:1,b:2"


def test_not_a_dict() -> None:
    assert "dict" in error(["bootstrap.servers"]).reason  # type: ignore[arg-type]


def test_group_id_is_required_to_subscribe() -> None:
    with pytest.raises(ConfigError) as info:
        make().require_group()
    assert info.value.key == "group.id" and "subscribe" in info.value.reason
    assert make(group__id="g").require_group() == "g"


# -- unknown and refused keys -------------------------------------------------------------------------


def test_unknown_key_with_a_hint() -> None:
    err = error({**BASE, "enable.auto.comit": True})
    assert err.key == "enable.auto.comit" and "did you mean enable.auto.commit" in err.reason


@pytest.mark.parametrize("key", ["rebalance_cb", "completely.unknown"])
def test_keys_that_would_hand_the_group_to_librdkafka_are_unknown(key: str) -> None:
    assert "unknown configuration key" in error({**BASE, key: "x"}).reason


def test_the_classic_protocol_type_is_refused_with_the_consumer_protocol() -> None:
    """As librdkafka: group.protocol.type belongs to the classic protocol (ignored there: its
    members always join as "consumer")."""
    assert "group.protocol=classic" in error({**BASE, "group.protocol.type": "consumer"}).reason


def test_non_string_key() -> None:
    assert error({**BASE, 5: "x"}).key == "5"  # type: ignore[dict-item]


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("session.timeout.ms", ["group.consumer.session.timeout.ms", "consumer.session.timeout.ms"]),
        ("heartbeat.interval.ms", ["group.consumer.heartbeat.interval.ms", "consumer.heartbeat.interval.ms"]),
        ("partition.assignment.strategy", ["group.remote.assignor", "group.local.assignors", "uniform"]),
    ],
)
def test_server_side_settings_are_refused_with_what_to_use_instead(key: str, words: list[str]) -> None:
    assert key in REFUSED_KEYS
    err = error({**BASE, key: 45_000})
    assert err.key == key and "group.protocol=consumer" in err.reason
    assert all(word in err.reason for word in words)


# -- group.protocol and strings -----------------------------------------------------------------------


def test_classic_protocol_takes_its_own_keys() -> None:
    config = ConsumerConfig.from_dict(
        {
            **BASE,
            "group.id": "g",
            "group.protocol": "Classic",
            "session.timeout.ms": 10_000,
            "heartbeat.interval.ms": 1_000,
            "partition.assignment.strategy": "cooperative-sticky",
        }
    )
    classic = config.member_config().classic
    assert config.classic and classic is not None
    assert (classic.strategies, classic.cooperative) == (("cooperative-sticky",), True)
    assert (classic.session_timeout_ms, classic.heartbeat_interval_ms) == (10_000, 1_000)
    group = {**BASE, "group.id": "g"}
    default = ConsumerConfig.from_dict({**group, "group.protocol": "classic"}).member_config().classic
    assert default is not None and default.strategies == ("range", "roundrobin") and not default.cooperative
    assert ConsumerConfig.from_dict(group).member_config().classic is None


class _Eager(PartitionAssignor):
    name = "mine"

    def metadata(self) -> AssignorMetadata:
        return AssignorMetadata(data=b"weights")

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        return GroupAssignment()


class _Cooperative(_Eager):
    name = "mine-cooperative"
    rebalance_protocol = "cooperative"


def _classic_strategy(value: Any) -> ConsumerConfig:
    return ConsumerConfig.from_dict(
        {**BASE, "group.id": "g", "group.protocol": "classic", "partition.assignment.strategy": value}
    )


def test_classic_strategies_take_the_applications_assignors() -> None:
    mine = _Eager()
    config = _classic_strategy([mine, "RANGE"])
    classic = config.member_config().classic
    assert classic is not None and classic.strategies == ("mine", "range") and not classic.cooperative
    assert classic.local_strategies == {"mine": b"weights"}
    assert config.group_local_assignors == (mine,) and config.member_config().client_assignors == ()
    loaded = _classic_strategy("cooperative-sticky, test_config:_Cooperative").member_config().classic
    assert loaded is not None and loaded.cooperative
    assert loaded.strategies == ("cooperative-sticky", "mine-cooperative")


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("sticky", "unknown strategy 'sticky'"),
        ("", "at least one strategy"),
        ([_Eager(), "cooperative-sticky"], "mixes eager"),
        ([_Cooperative(), "range"], "mixes eager"),
        ([_Eager(), _Eager()], "mine repeats"),
        ("test_config:NoSuchClass", "cannot import"),
        ([object()], "is not an assignor"),
    ],
)
def test_classic_strategy_errors_name_the_key(value: Any, reason: str) -> None:
    found = error({**BASE, "group.protocol": "classic", "partition.assignment.strategy": value})
    assert found.key == "partition.assignment.strategy" and reason in found.reason


def test_a_classic_assignor_declares_a_known_rebalance_protocol() -> None:
    odd = _Eager()
    odd.rebalance_protocol = "incremental"
    found = error({**BASE, "group.protocol": "classic", "partition.assignment.strategy": [odd]})
    assert "rebalance_protocol must be 'eager' or 'cooperative'" in found.reason
    clash = _Eager()
    clash.name = "range"
    found = error({**BASE, "group.protocol": "classic", "partition.assignment.strategy": [clash]})
    assert "name of a built-in strategy" in found.reason


@pytest.mark.parametrize("value", ["consumer", "CONSUMER", "Consumer"])
def test_consumer_protocol(value: str) -> None:
    assert make(group__protocol=value).group_protocol == "consumer"


@pytest.mark.parametrize("value", ["streams", "", 1])
def test_other_protocols_are_invalid(value: Any) -> None:
    assert error({**BASE, "group.protocol": value}).key == "group.protocol"


@pytest.mark.parametrize(
    ("key", "field"),
    [
        ("group.id", "group_id"),
        ("group.instance.id", "group_instance_id"),
        ("client.rack", "client_rack"),
        ("group.remote.assignor", "group_remote_assignor"),
        ("client.id", "client_id"),
    ],
)
def test_string_keys(key: str, field: str) -> None:
    assert getattr(ConsumerConfig.from_dict({**BASE, key: "value-1"}), field) == "value-1"
    assert error({**BASE, key: "  "}).reason == "must not be empty"
    assert "string" in error({**BASE, key: ["x"]}).reason
    # an integer is read as its text, as confluent-kafka hands librdkafka str(value)
    assert getattr(ConsumerConfig.from_dict({**BASE, key: 12}), field) == "12"


# -- integers and booleans ------------------------------------------------------------------------------

INTS = [
    ("max.poll.interval.ms", "max_poll_interval_ms", 1, 86_400_000),
    ("auto.commit.interval.ms", "auto_commit_interval_ms", 1, 86_400_000),
    ("retry.backoff.ms", "retry_backoff_ms", 1, 300_000),
    ("retry.backoff.max.ms", "retry_backoff_max_ms", 1, 300_000),
    ("request.timeout.ms", "request_timeout_ms", 1, 900_000),
    ("socket.connection.setup.timeout.ms", "socket_connection_setup_timeout_ms", 1_000, 2**31 - 1),
]


@pytest.mark.parametrize(("key", "field", "low", "high"), INTS)
def test_integer_keys(key: str, field: str, low: int, high: int) -> None:
    extra = {"retry.backoff.max.ms": 300_000} if key == "retry.backoff.ms" else {}
    extra = {"retry.backoff.ms": 1} if key == "retry.backoff.max.ms" else extra
    for value, expected in ((low, low), (str(high), high), (f" {low} ", low)):
        config = ConsumerConfig.from_dict({**BASE, **extra, key: value})
        assert getattr(config, field) == expected
    for bad in (low - 1, high + 1, "12abc", "", float("nan"), True, None):
        assert error({**BASE, **extra, key: bad}).key == key, bad
    # a float is truncated, as librdkafka reads the str(1500.7) confluent-kafka hands it
    assert getattr(ConsumerConfig.from_dict({**BASE, **extra, key: low + 0.7}), field) == low


def test_retry_backoff_max_must_not_be_below_the_backoff() -> None:
    err = error({**BASE, "retry.backoff.ms": 500, "retry.backoff.max.ms": "400"})
    assert err.key == "retry.backoff.max.ms" and "500" in err.reason


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("FALSE", False),
        ("1", True),
        ("0", False),
        (" True ", True),
    ],
)
def test_enable_auto_commit_accepts_python_and_librdkafka_booleans(value: Any, expected: bool) -> None:
    assert make(enable__auto__commit=value).enable_auto_commit is expected


@pytest.mark.parametrize("value", ["yes", "", 1, 0, None, 2.0])
def test_enable_auto_commit_rejects_other_values(value: Any) -> None:
    assert error({**BASE, "enable.auto.commit": value}).key == "enable.auto.commit"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("earliest", OffsetReset.EARLIEST),
        ("smallest", OffsetReset.EARLIEST),
        ("beginning", OffsetReset.EARLIEST),
        ("latest", OffsetReset.LATEST),
        ("largest", OffsetReset.LATEST),
        ("end", OffsetReset.LATEST),
        ("none", OffsetReset.NONE),
        ("error", OffsetReset.NONE),
        ("Earliest", OffsetReset.EARLIEST),
    ],
)
def test_auto_offset_reset_and_its_aliases(value: str, expected: OffsetReset) -> None:
    assert make(auto__offset__reset=value).auto_offset_reset is expected


@pytest.mark.parametrize("value", ["first", "", 0])
def test_auto_offset_reset_rejects_other_values(value: Any) -> None:
    assert error({**BASE, "auto.offset.reset": value}).key == "auto.offset.reset"


def test_on_commit_must_be_callable() -> None:
    def on_commit(err: Any, partitions: Any) -> None: ...

    assert make(on_commit=on_commit).on_commit is on_commit
    assert error({**BASE, "on_commit": "print"}).key == "on_commit"


# -- local assignors ---------------------------------------------------------------------------------------


def test_local_assignors_as_objects_and_import_strings() -> None:
    instance = StickyAssignor()
    other = Versioned("other", -1, 0)
    config = make(group__local__assignors=[instance, other])
    assert config.group_local_assignors == (instance, other)
    config = make(group__local__assignors=[f"{__name__}:StickyAssignor"])
    (imported,) = config.group_local_assignors
    assert isinstance(imported, StickyAssignor)
    config = make(group__local__assignors=[f"{__name__}:Holder.instance"])  # a dotted attribute path
    assert config.group_local_assignors == (Holder.instance,)


def test_local_assignors_comma_separated_string() -> None:
    config = make(group__local__assignors=f"{__name__}:StickyAssignor")
    assert [a.name for a in config.group_local_assignors] == ["sticky"]


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("no_such_module_xyz:Thing", "cannot import"),
        (f"{__name__}:Missing", "cannot import"),
        ("just-a-name", "'module:Class'"),
        (f"{__name__}:NeedsArguments", "without arguments"),
        ([object()], "has no name"),
        ([Versioned("", 0, 1)], "non-empty"),
        ([Versioned("a", 2, 1)], "minimum_version <= maximum_version"),
        ([Versioned("a", -2, 1)], "-1 <="),
        ([Versioned("a", 0, 40_000)], "32767"),
        ([Versioned("a", "0", 1)], "integers"),
        ([Versioned("a", 0, 1), Versioned("a", 0, 2)], "unique"),
        (42, "list"),
    ],
)
def test_bad_local_assignors(value: Any, words: str) -> None:
    err = error({**BASE, "group.local.assignors": value})
    assert err.key == "group.local.assignors" and words in err.reason


def test_local_and_remote_assignors_are_exclusive() -> None:
    err = error({**BASE, "group.local.assignors": [StickyAssignor()], "group.remote.assignor": "uniform"})
    assert err.key == "group.local.assignors" and "group.remote.assignor" in err.reason


# -- librdkafka passthrough ------------------------------------------------------------------------------


def test_passthrough_keys_and_prefixes_go_to_librdkafka() -> None:
    def stats(_: str) -> None: ...

    settings = {
        "fetch.wait.max.ms": 50,
        "fetch.min.bytes": "1",
        "max.partition.fetch.bytes": 1_048_576,
        "isolation.level": "read_committed",
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": "/etc/ca.pem",
        "sasl.mechanisms": "PLAIN",
        "socket.keepalive.enable": True,
        "client.dns.lookup": "use_all_dns_ips",
        "debug": "cgrp,fetch",
        "statistics.interval.ms": 1000,
        "queued.min.messages": 1000,
        "check.crcs": False,
        "enable.partition.eof": True,
        "broker.address.family": "v4",
        "log_level": 6,
        "stats_cb": stats,
    }
    config = ConsumerConfig.from_dict({**BASE, **settings})
    assert dict(config.librdkafka_passthrough) == settings
    assert {"isolation.level", "debug", "stats_cb", "error_cb", "logger"} <= PASSTHROUGH_KEYS


@pytest.mark.parametrize(("key", "value"), [("fetch.max.bytes", [1]), ("debug", None), ("error_cb", "print")])
def test_passthrough_values_must_be_plain(key: str, value: Any) -> None:
    assert error({**BASE, key: value}).key == key


def test_librdkafka_config_for_the_inner_handle() -> None:
    config = make(client__rack="r1", auto__offset__reset="none", debug="fetch", client__id="c")
    inner = config.librdkafka_config()
    assert inner == {
        "bootstrap.servers": "localhost:9092",
        "client.id": "c",
        "client.rack": "r1",
        "socket.connection.setup.timeout.ms": 10_000,
        "auto.offset.reset": "error",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "fetch.queue.backoff.ms": 20,
        "queued.min.messages": 1_000_000,
        "debug": "fetch",
    }
    assert make(auto__offset__reset="smallest").librdkafka_config()["auto.offset.reset"] == "earliest"


def test_the_fetch_handle_defaults_yield_to_the_application() -> None:
    assert make().librdkafka_config()["fetch.queue.backoff.ms"] == 20
    assert make(fetch__queue__backoff__ms=1000).librdkafka_config()["fetch.queue.backoff.ms"] == 1000
    assert make(queued__min__messages=50_000).librdkafka_config()["queued.min.messages"] == 50_000


# -- the member core's configuration ------------------------------------------------------------------------


def test_member_config() -> None:
    config = make(
        group__id="g",
        group__instance__id="i",
        client__rack="r",
        max__poll__interval__ms="60000",
        enable__auto__commit="false",
        auto__commit__interval__ms=1_000,
        auto__offset__reset="earliest",
        retry__backoff__ms=50,
        retry__backoff__max__ms=500,
        group__local__assignors=[StickyAssignor(), Versioned("v", 0, 3)],
    )
    member = config.member_config({"v": (1, b"meta")})
    assert (member.group_id, member.instance_id, member.rack_id) == ("g", "i", "r")
    assert member.rebalance_timeout_ms == 60_000 and member.auto_commit is False
    assert member.auto_commit_interval_ms == 1_000 and member.auto_offset_reset is OffsetReset.EARLIEST
    assert (member.retry_backoff_ms, member.retry_backoff_max_ms) == (50, 500)
    assert member.client_assignors == (
        AnnouncedAssignor("sticky", 0, 2, 2),
        AnnouncedAssignor("v", 0, 3, 1, b"meta"),
    )
    assert make(group__id="g", group__remote__assignor="range").member_config().server_assignor == "range"
    with pytest.raises(ConfigError):
        make().member_config()


def test_heartbeat_alignment_group_by_default_none_or_refused_with_classic() -> None:
    """``heartbeat.alignment``: the consumer protocol's members heartbeat on the group's ticks
    (`member.grid`) unless it is ``none``; the classic protocol keeps heartbeat.interval.ms."""
    group = {**BASE, "group.id": "g"}
    assert ConsumerConfig.from_dict(group).member_config().align_heartbeats
    assert (
        ConsumerConfig.from_dict({**group, "heartbeat.alignment": "GROUP"}).member_config().align_heartbeats
    )
    assert (
        not ConsumerConfig.from_dict({**group, "heartbeat.alignment": "none"})
        .member_config()
        .align_heartbeats
    )
    bad = error({**group, "heartbeat.alignment": "wall"})
    assert bad.key == "heartbeat.alignment" and "group or none" in bad.reason
    classic = error({**group, "group.protocol": "classic", "heartbeat.alignment": "group"})
    assert classic.key == "heartbeat.alignment" and "group.protocol=consumer" in classic.reason
