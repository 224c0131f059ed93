"""Static membership: a consumer that restarts quickly gets its partitions back without a rebalance.

A consumer with ``group.instance.id`` is a *static* member. When it closes, it leaves the group
with member epoch -2 ("temporarily"): the coordinator keeps its assignment for the session
timeout instead of moving its partitions to the other members. A new consumer with the same
``group.instance.id`` that joins within that time takes the old member's place and its
partitions; the group epoch does not change and the other members see no rebalance at all (no
callback, no pause). Use it for rolling restarts of stateful consumers. If it does not come back in
time, the coordinator removes it and its partitions are reassigned as usual.

The demo: a static and a dynamic member share a topic; the static one closes and a new process
(here: a new Consumer) with the same instance id starts; it gets the same partitions and the
dynamic member's assignment never changes. It exits 0.

Run it by itself (it starts an in-process reference cluster)::

    python examples/static_membership.py

or against a Kafka 4.x cluster::

    python examples/static_membership.py --bootstrap-servers localhost:9092
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from kconsumer import Consumer, TopicPartition

PARTITIONS = 4


@contextlib.contextmanager
def kafka(bootstrap: str | None) -> Iterator[tuple[str, Any]]:
    """(bootstrap servers, the in-process cluster or None when a cluster was given)."""
    if bootstrap is not None:
        yield bootstrap, None
        return
    from kconsumer.testing import ReferenceCluster

    # A 10 s session timeout: the static member has 10 s to come back (Kafka's default is 45 s).
    with ReferenceCluster(
        heartbeat_interval_ms=200, session_timeout_ms=10_000, assignment_interval_ms=0
    ) as cluster:
        yield cluster.bootstrap_servers, cluster


def create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result(30)


def poll_until(consumers: list[Consumer], done: Callable[[], bool], timeout: float = 30.0) -> None:
    """Poll every consumer (from this thread, one after the other) until `done()`."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError("the group did not get there in time")
        for consumer in consumers:
            consumer.poll(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--bootstrap-servers", help="a Kafka 4.x cluster (default: an in-process reference cluster)"
    )
    args = parser.parse_args()
    run = uuid.uuid4().hex[:8]
    topic, group = f"static-example-{run}", f"static-example-{run}"

    with kafka(args.bootstrap_servers) as (bootstrap, cluster):
        create_topic(bootstrap, topic)
        settings = {"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
        dynamic_events: list[str] = []

        def note(kind: str) -> Callable[[Consumer, list[TopicPartition]], None]:
            def callback(_consumer: Consumer, partitions: list[TopicPartition]) -> None:
                dynamic_events.append(f"{kind} {sorted(tp.partition for tp in partitions)}")

            return callback

        dynamic = Consumer({**settings, "client.id": "dynamic"})
        dynamic.subscribe([topic], on_assign=note("assigned"), on_revoke=note("revoked"))
        static = Consumer({**settings, "client.id": "static", "group.instance.id": "worker-1"})
        static.subscribe([topic])
        poll_until(
            [dynamic, static], lambda: len(dynamic.assignment()) + len(static.assignment()) == PARTITIONS
        )
        # Balanced, and the dynamic member's reconciliation over: on_partitions_assigned follows
        # every reconciliation, the one that revoked [2, 3] too (with nothing new).
        poll_until(
            [dynamic, static],
            lambda: (
                len(dynamic.assignment()) == len(static.assignment())
                and dynamic_events[-1].startswith("assigned")
            ),
        )
        kept = [tp.partition for tp in static.assignment()]
        before = list(dynamic_events)
        epoch = cluster.describe_group(group).epoch if cluster is not None else None
        print(
            f"static member owns {kept}, dynamic member owns {[tp.partition for tp in dynamic.assignment()]}"
        )

        static.close()  # leaves with epoch -2: its partitions wait for it
        if cluster is not None:
            (member,) = [
                m for m in cluster.describe_group(group).members.values() if m.instance_id == "worker-1"
            ]
            print(f"after close the coordinator keeps the static member at epoch {member.member_epoch}")

        restarted = Consumer({**settings, "client.id": "static-restarted", "group.instance.id": "worker-1"})
        restarted.subscribe([topic])
        poll_until([dynamic, restarted], lambda: len(restarted.assignment()) == len(kept))
        back = [tp.partition for tp in restarted.assignment()]
        print(f"the restarted static member owns {back}")
        ok = back == kept and dynamic_events == before
        if cluster is not None:
            after = cluster.describe_group(group).epoch
            print(f"group epoch before {epoch}, after the restart {after}")
            ok = ok and after == epoch
        print(
            f"the dynamic member saw: {dynamic_events}; during the restart: {dynamic_events[len(before) :]}"
        )
        restarted.close()
        dynamic.close()
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
