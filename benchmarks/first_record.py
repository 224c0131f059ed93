"""From ``subscribe()`` to the first record: kconsumer next to confluent-kafka's KIP-848 consumer.

Each run is a fresh process with a fresh group on a topic of 4 partitions holding 100 records each,
on both brokers (their own processes, Kafka's default group timers): the time from ``subscribe()``
to the ``on_assign`` callback, from the callback to the first record, and in all. Medians of
``--runs`` runs per client and broker. This is the cost every join, restart and takeover pays on
top of the protocol's own round trips.

Run from the repository root::

    python -m benchmarks.first_record --runs 5
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Any

from .common import BROKERS, broker, produce

TOPIC = "first-record"


def _member(queue: Any, kind: str, bootstrap: str) -> None:
    import confluent_kafka as ck

    from kconsumer import Consumer

    config = {
        "bootstrap.servers": bootstrap,
        "group.id": f"first-record-{uuid.uuid4().hex[:8]}",
        "group.protocol": "consumer",
        "auto.offset.reset": "earliest",
    }
    consumer = Consumer(config) if kind == "kconsumer" else ck.Consumer(config)
    marks: dict[str, float] = {}
    consumer.subscribe([TOPIC], on_assign=lambda _c, _p: marks.setdefault("assign", time.monotonic()))
    subscribed = time.monotonic()
    # poll() returns at the first record; consume(n) would wait its whole timeout for n records.
    while consumer.poll(0.05) is None:
        pass
    first = time.monotonic()
    queue.put((marks["assign"] - subscribed, first - marks["assign"], first - subscribed))
    consumer.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    ctx = multiprocessing.get_context("spawn")
    print(
        f"{'broker':10} {'client':18} {'subscribe->assign':>18} {'assign->record':>15} {'total':>8}"
        "  (median s)"
    )
    for kind in BROKERS:
        with broker(kind, [(TOPIC, 4)]) as bootstrap:
            produce(bootstrap, TOPIC, 4, 100, 100)
            for client in ("kconsumer", "confluent KIP-848"):
                runs = []
                for _ in range(args.runs):
                    queue = ctx.Queue()
                    process = ctx.Process(target=_member, args=(queue, client, bootstrap))
                    process.start()
                    runs.append(queue.get(timeout=60))
                    process.join(30)
                a, b, c = (statistics.median(x) for x in zip(*runs, strict=True))
                print(f"{kind:10} {client:18} {a:18.3f} {b:15.3f} {c:8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
