"""Every consumer or global property of librdkafka that confluent-kafka's consumer accepts, kconsumer
accepts too: applied as its own setting, passed to its librdkafka fetch handle, or accepted and
ignored for a documented reason (`IGNORED_KEYS`). The list is librdkafka's own, read from the
library confluent-kafka ships, so a new librdkafka property shows up here."""

from __future__ import annotations

import logging

import confluent_kafka as ck
import pytest
from librdkafka_properties import properties

from kconsumer.client.config import (
    _OWN_KEYS,
    IGNORED_KEYS,
    PASSTHROUGH_KEYS,
    PASSTHROUGH_PREFIXES,
    REFUSED_KEYS,
    ConsumerConfig,
)
from kconsumer.errors import ConfigError

BASE = {"bootstrap.servers": "localhost:1", "group.id": "walk", "group.protocol": "consumer"}
_QUIET = logging.getLogger("config-walk")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def _confluent_accepts(key: str, value: object) -> bool:
    try:
        ck.Consumer({**BASE, "logger": _QUIET, key: value}).close()
    except (ck.KafkaException, ValueError, TypeError):
        return False
    return True


def _kconsumer_accepts(key: str, value: object) -> str | None:
    try:
        ConsumerConfig.from_dict({**BASE, key: value})
    except ConfigError as exc:
        return str(exc)
    return None


def _disposition(key: str) -> str:
    if key in IGNORED_KEYS:
        return "ignored"
    if key in _OWN_KEYS:
        return "own"
    if key in PASSTHROUGH_KEYS or key.startswith(PASSTHROUGH_PREFIXES):
        return "passed"
    return "?"


def test_every_property_confluent_accepts_is_accepted() -> None:
    walked = [p for p in properties() if p.scope in ("*", "C")]
    if not walked:
        pytest.skip("librdkafka's property table is not readable here")
    counts: dict[str, int] = {}
    refused: list[str] = []
    for prop in walked:
        value = prop.sample()
        if not _confluent_accepts(prop.name, value):
            kind = "refused by both" if _kconsumer_accepts(prop.name, value) else "refused by confluent only"
            counts[kind] = counts.get(kind, 0) + 1
            continue
        error = _kconsumer_accepts(prop.name, value)
        if error is not None:
            refused.append(f"{prop.name}={value!r}: {error}")
            continue
        kind = _disposition(prop.name)
        counts[kind] = counts.get(kind, 0) + 1
    print(f"{len(walked)} librdkafka consumer and global properties: {counts}")
    assert not refused, "\n".join(refused)
    assert counts.get("?", 0) == 0


def test_refused_keys_are_refused_by_confluent_too() -> None:
    """What kconsumer refuses with the consumer protocol, librdkafka's consumer refuses as well."""
    for key in REFUSED_KEYS:
        value = {"session.timeout.ms": 45000, "heartbeat.interval.ms": 3000}.get(key, "range")
        if key == "group.protocol.type":
            value = "consumer"
        assert not _confluent_accepts(key, value), key
        assert _kconsumer_accepts(key, value) is not None, key


def test_values_confluent_coerces_and_the_topic_config_dict() -> None:
    config = ConsumerConfig.from_dict(
        {
            **BASE,
            "group.id": 42,
            "group.instance.id": 123,
            "max.poll.interval.ms": 1500.7,
            "default.topic.config": {"auto.offset.reset": "earliest", "group.id": "ignored"},
        }
    )
    assert (config.group_id, config.group_instance_id, config.max_poll_interval_ms) == ("42", "123", 1500)
    assert config.auto_offset_reset.name == "EARLIEST"
    with pytest.raises(ConfigError, match=r"no\.such\.key"):
        ConsumerConfig.from_dict({**BASE, "no.such.key": 1})
    with pytest.raises(ConfigError, match=r"default\.topic\.config"):
        ConsumerConfig.from_dict({**BASE, "default.topic.config": "auto.offset.reset=earliest"})
