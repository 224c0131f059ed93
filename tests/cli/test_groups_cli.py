"""``kconsumer groups`` run as a subprocess, against the reference cluster and Apache Kafka
(consumer and classic groups, a SASL_SSL listener) and librdkafka's mock cluster (which lacks the
describe, list and OffsetDelete APIs: offsets and resets still work there, the rest fails naming
the API)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import confluent_kafka as ck
import pytest
from backends import Cluster, open_cluster
from waiting import wait_until

from kconsumer import Consumer

TOPIC = "orders"


def groups(
    servers: str, *args: str, settings: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    options = [f"-X{key}={value}" for key, value in (settings or {}).items()]
    return subprocess.run(
        [sys.executable, "-m", "kconsumer", "groups", *args, "--bootstrap-servers", servers, *options],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def consume(consumer: Any, count: int) -> int:
    """Poll until `count` records arrived; commit them."""
    seen = 0
    deadline = time.monotonic() + 20
    while seen < count and time.monotonic() < deadline:
        message = consumer.poll(0.1)
        if message is not None and not message.error():
            seen += 1
    if seen:
        consumer.commit(asynchronous=False)
    return seen


@pytest.fixture(scope="module")
def cluster(backend: str) -> Iterator[Cluster]:
    with open_cluster(backend, session_timeout_ms=3000) as started:
        started.create_topic(TOPIC, 3)
        started.produce(TOPIC, [f"v{i}" for i in range(30)])  # 10 per partition
        yield started


def kconsumer_member(cluster: Cluster, group: str, client_id: str) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": group,
            "client.id": client_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([TOPIC])
    return consumer


def test_describe_shows_members_epochs_and_lag_of_a_consumer_group(cluster: Cluster) -> None:
    first = kconsumer_member(cluster, "shop", "app-1")
    second = kconsumer_member(cluster, "shop", "app-2")
    try:
        everything = {(TOPIC, p): 10 for p in range(3)}

        def caught_up() -> bool:
            for consumer in (first, second):
                message = consumer.poll(0.05)
                if message is not None and not message.error():
                    consumer.commit(message=message, asynchronous=False)
            return _stable(cluster, "shop", 2) and cluster.committed("shop") == everything

        wait_until(caught_up, timeout=30, what="both members sharing the topic, all committed")
        cluster.produce(TOPIC, ["late"], partition=0)  # one record of lag on partition 0
        data = as_json(groups(cluster.bootstrap_servers, "describe", "shop", "--format", "json"))
        described = cluster.describe_group("shop")
        assert described is not None
        group = data["group"]
        assert group["group_type"] == "consumer" and group["state"] == "Stable"
        assert group["group_epoch"] == described.epoch
        members = {m["member_id"]: m for m in group["members"]}
        assert set(members) == set(described.members)
        assert sorted(m["client_id"] for m in members.values()) == ["app-1", "app-2"]
        owned = sorted((p["topic"], p["partition"]) for m in members.values() for p in m["assignment"])
        assert owned == [(TOPIC, 0), (TOPIC, 1), (TOPIC, 2)]
        offsets = {(r["topic"], r["partition"]): r for r in data["offsets"]}
        assert {k: r["committed"] for k, r in offsets.items()} == cluster.committed("shop")
        assert offsets[(TOPIC, 0)]["log_end"] == 11 and offsets[(TOPIC, 0)]["lag"] == 1
        assert offsets[(TOPIC, 1)]["lag"] == 0
        assert all(r["member_id"] in members for r in offsets.values())

        text = groups(cluster.bootstrap_servers, "describe", "shop")
        assert text.returncode == 0, text.stderr
        assert "group shop (consumer): Stable, 2 members" in text.stdout
        assert "MEMBER-ID" in text.stdout and "LOG-END-OFFSET" in text.stdout
    finally:
        first.close()
        second.close()


def _stable(cluster: Cluster, group: str, members: int) -> bool:
    described = cluster.describe_group(group)
    return (
        described is not None
        and len(described.members) == members
        and described.state == "Stable"
        and all(m.assignment for m in described.members.values())
    )


def test_list_filters_by_type_and_state_and_describes_classic_groups(cluster: Cluster) -> None:
    classic = ck.Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": "legacy",
            "group.protocol": "classic",
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
            "log_level": 3,
        }
    )
    classic.subscribe([TOPIC])
    modern = kconsumer_member(cluster, "modern", "app")
    try:
        wait_until(lambda: consume(classic, 1) and consume(modern, 1), what="both groups consuming")
        listed = {
            g["group_id"]: g for g in as_json(groups(cluster.bootstrap_servers, "list", "--format", "json"))
        }
        assert listed["legacy"]["group_type"] == "classic" and listed["modern"]["group_type"] == "consumer"
        only_classic = as_json(
            groups(cluster.bootstrap_servers, "list", "--type", "classic", "--format", "json")
        )
        assert "legacy" in {g["group_id"] for g in only_classic}
        assert "modern" not in {g["group_id"] for g in only_classic}
        stable = as_json(groups(cluster.bootstrap_servers, "list", "--state", "stable", "--format", "json"))
        assert {"legacy", "modern"} <= {g["group_id"] for g in stable}

        data = as_json(
            groups(cluster.bootstrap_servers, "describe", "legacy", "--members", "--format", "json")
        )
        group = data["group"]
        assert group["group_type"] == "classic" and group["state"] == "Stable"
        assert group["assignor"] in ("range", "roundrobin")
        (member,) = group["members"]
        assert member["member_epoch"] is None
        assert sorted(p["partition"] for p in member["assignment"]) == [0, 1, 2]
    finally:
        classic.close()
        modern.close()


def test_reset_offsets_waits_for_an_empty_group_then_moves_every_mode(cluster: Cluster) -> None:
    member = kconsumer_member(cluster, "resets", "app")
    try:
        assert consume(member, 30) == 30
        refused = groups(
            cluster.bootstrap_servers, "reset-offsets", "resets", "--all-topics", "--to-earliest"
        )
        assert refused.returncode == 1 and "no members" in refused.stderr
    finally:
        member.close()
    wait_until(lambda: _members(cluster, "resets") == 0, what="the member leaving")
    before = cluster.committed("resets")
    servers = cluster.bootstrap_servers

    dry = as_json(
        groups(servers, "reset-offsets", "resets", "--all-topics", "--to-earliest", "--format", "json")
    )
    assert {r["result"] for r in dry} == {"dry run"} and {r["new"] for r in dry} == {0}
    assert cluster.committed("resets") == before

    done = groups(servers, "reset-offsets", "resets", "--topic", f"{TOPIC}:1", "--to-earliest", "--execute")
    assert done.returncode == 0, done.stderr
    assert cluster.committed("resets")[(TOPIC, 1)] == 0

    groups(servers, "reset-offsets", "resets", "--topic", TOPIC, "--to-offset", "4", "--execute")
    assert set(cluster.committed("resets").values()) == {4}
    groups(servers, "reset-offsets", "resets", "--all-topics", "--shift-by", "-10", "--execute")
    assert set(cluster.committed("resets").values()) == {0}  # clamped to the log start
    groups(servers, "reset-offsets", "resets", "--topic", f"{TOPIC}:2", "--to-offset", "999", "--execute")
    assert cluster.committed("resets")[(TOPIC, 2)] == 10  # clamped to the log end
    future = groups(
        servers,
        "reset-offsets",
        "resets",
        "--all-topics",
        "--to-datetime",
        "2999-01-01T00:00:00",
        "--execute",
    )
    assert future.returncode == 0, future.stderr
    # the log ends (an earlier test of this module adds a record to partition 0)
    log_ends = {(TOPIC, p): high for p, (_low, high) in enumerate(cluster.watermarks(TOPIC))}
    assert cluster.committed("resets") == log_ends and log_ends[(TOPIC, 1)] == 10

    bad = groups(servers, "reset-offsets", "resets", "--topic", "nowhere", "--to-latest")
    assert bad.returncode == 1 and "does not exist" in bad.stderr


def _members(cluster: Cluster, group: str) -> int:
    described = cluster.describe_group(group)
    return 0 if described is None else len(described.members)


def test_delete_offsets_refuses_subscribed_topics_then_deletes(cluster: Cluster) -> None:
    member = kconsumer_member(cluster, "cleanup", "app")
    try:
        assert consume(member, 30) == 30
        refused = groups(cluster.bootstrap_servers, "delete-offsets", "cleanup", "--topic", f"{TOPIC}:0")
        assert refused.returncode == 1 and "GROUP_SUBSCRIBED_TO_TOPIC" in refused.stdout
    finally:
        member.close()
    done = as_json(
        groups(
            cluster.bootstrap_servers,
            "delete-offsets",
            "cleanup",
            "--topic",
            f"{TOPIC}:0",
            "--format",
            "json",
        )
    )
    assert done == [{"topic": TOPIC, "partition": 0, "result": "deleted"}]
    assert set(cluster.committed("cleanup")) == {(TOPIC, 1), (TOPIC, 2)}


def test_unknown_groups_and_unreachable_clusters_have_their_exit_status(cluster: Cluster) -> None:
    missing = groups(cluster.bootstrap_servers, "describe", "nobody")
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    gone = groups("127.0.0.1:1", "list", "--timeout", "1")
    assert gone.returncode == 2 and "no broker answered" in gone.stderr
    wrong = groups(cluster.bootstrap_servers, "list", settings={"security.protocol": "BOGUS"})
    assert wrong.returncode == 2 and "security.protocol" in wrong.stderr


def test_a_sasl_ssl_cluster_is_reached_with_the_consumers_settings(backend: str) -> None:
    users = {"alice": "alice-secret"}
    with open_cluster(
        backend, security_protocol="SASL_SSL", sasl_mechanisms=("SCRAM-SHA-256",), users=users
    ) as secured:
        secured.create_topic(TOPIC, 1)
        secured.produce(TOPIC, ["x"])
        settings = {k: v for k, v in secured.client_config("alice").items() if k != "bootstrap.servers"}
        consumer = Consumer(
            {**secured.client_config("alice"), "group.id": "safe", "auto.offset.reset": "earliest"}
        )
        consumer.subscribe([TOPIC])
        try:
            assert consume(consumer, 1) == 1
            data = as_json(
                groups(secured.bootstrap_servers, "describe", "safe", "--format", "json", settings=settings)
            )
            assert data["offsets"][0]["committed"] == 1 and len(data["group"]["members"]) == 1
            denied = groups(
                secured.bootstrap_servers, "list", settings={**settings, "sasl.password": "wrong"}
            )
            assert denied.returncode == 2 and "authentication" in denied.stderr.lower()
        finally:
            consumer.close()


@pytest.fixture(scope="module")
def mock() -> Iterator[str]:
    handle = ck.Producer({"test.mock.num.brokers": 2, "log_level": 3})
    servers = ",".join(f"{b.host}:{b.port}" for b in handle.list_topics(timeout=5).brokers.values())
    producer = ck.Producer({"bootstrap.servers": servers, "log_level": 3})
    for i in range(30):
        producer.produce(TOPIC, f"v{i}".encode(), partition=i % 3)
    assert producer.flush(10) == 0
    yield servers
    del handle


def test_the_mock_cluster_shows_offsets_and_lag_and_resets_an_offsets_only_group(mock: str) -> None:
    manual = ck.Consumer({"bootstrap.servers": mock, "group.id": "batch", "log_level": 3})
    manual.commit(
        offsets=[ck.TopicPartition(TOPIC, p, 4) for p in range(3)], asynchronous=False
    )  # a manual-assignment job's offsets
    data = as_json(groups(mock, "describe", "batch", "--format", "json"))
    assert "neither ConsumerGroupDescribe nor DescribeGroups" in data["describe_unsupported"]
    assert [(r["partition"], r["committed"], r["log_end"], r["lag"]) for r in data["offsets"]] == [
        (0, 4, 10, 6),
        (1, 4, 10, 6),
        (2, 4, 10, 6),
    ]
    done = groups(mock, "reset-offsets", "batch", "--all-topics", "--to-latest", "--execute")
    assert done.returncode == 0, done.stderr
    committed = manual.committed([ck.TopicPartition(TOPIC, p) for p in range(3)], timeout=10)
    assert [tp.offset for tp in committed] == [10, 10, 10]
    manual.close()

    listing = groups(mock, "list")
    assert listing.returncode == 2 and "does not implement ListGroups" in listing.stderr
    deleting = groups(mock, "delete-offsets", "batch", "--topic", TOPIC)
    assert deleting.returncode == 2 and "does not implement OffsetDelete" in deleting.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(cluster: Cluster) -> None:
    """``kconsumer groups list | head``: the pipe closes first; no BrokenPipeError traceback."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kconsumer",
            "groups",
            "list",
            "--bootstrap-servers",
            cluster.bootstrap_servers,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before the command writes
    errors = process.stderr.read()
    assert process.wait(60) == 0, errors
    assert "Traceback" not in errors and "BrokenPipe" not in errors, errors
