"""Commits as a confluent-kafka user sees them, scenario by scenario, with confluent-kafka's KIP-848
consumer and with kconsumer on the same reference cluster (see parity_harness)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException, TopicPartition
from consumer_harness import Ledger, cluster_committed, position
from parity_harness import Run, compare, drain, read

from kconsumer.testing import ReferenceCluster


def _code(call: Any) -> Any:
    """What a call gives: ("ok", its result as plain data) or ("error", KafkaError code, text)."""
    try:
        result = call()
    except KafkaException as exc:
        return ("error", exc.args[0].code(), exc.args[0].str())
    except ValueError as exc:
        return ("ValueError", str(exc))
    if isinstance(result, list):
        return ("ok", [(tp.partition, tp.offset, tp.metadata) for tp in result])
    return ("ok", result)


def test_logical_offsets_are_refused(cluster: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("logical", 1, records=5), run.group("logical")
        consumer = run.consumer(group)
        consumer.subscribe([topic])
        read(consumer, 5)
        seen = {
            f"commit {offset}": _code(
                lambda offset=offset: consumer.commit(
                    offsets=[TopicPartition(topic, 0, offset)], asynchronous=False
                )
            )
            for offset in (-1001, -2, -1)
        }
        seen["committed"] = sorted(cluster.committed(group).items())
        return seen

    compare("logical offsets", scenario, cluster)


def test_metadata_round_trips(cluster: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("metadata", 2, records=3), run.group("metadata")
        consumer = run.consumer(group)
        consumer.subscribe([topic])
        read(consumer, 6)
        wanted = [TopicPartition(topic, 0, 2, metadata="batch-7"), TopicPartition(topic, 1, 1)]
        seen = {"commit": _code(lambda: consumer.commit(offsets=wanted, asynchronous=False))}
        found = consumer.committed([TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)
        seen["committed"] = [(tp.partition, tp.offset, tp.metadata) for tp in found]
        return seen

    compare("metadata", scenario, cluster)


def test_leader_epochs_in_commit_results(cluster: ReferenceCluster) -> None:
    """The leader epoch of the records consumed travels with the offsets: in what commit() (of
    the positions, and of a message) returns, in on_commit, and in committed(); an explicit offset
    without one is committed without one."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("epochs", 2, records=2), run.group("epochs")
        reports: list[Any] = []
        consumer = run.consumer(group, on_commit=lambda _e, ps: reports.append(_epochs(ps)))
        consumer.subscribe([topic])
        messages = read(consumer, 4)
        seen: dict[str, Any] = {"record epochs": sorted({m.leader_epoch() for m in messages})}
        seen["commit()"] = _epochs(consumer.commit(asynchronous=False))
        last_of_0 = max((m for m in messages if m.partition() == 0), key=lambda m: m.offset())
        seen["commit(message)"] = _epochs(consumer.commit(message=last_of_0, asynchronous=False))
        both = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        seen["committed"] = _epochs(consumer.committed(both, timeout=10))
        consumer.commit(offsets=[TopicPartition(topic, 1, 1)], asynchronous=True)
        deadline = time.monotonic() + 10
        while not reports and time.monotonic() < deadline:
            consumer.poll(0.05)
        seen["on_commit of an offset without epoch"] = reports
        seen["committed after"] = _epochs(consumer.committed(both, timeout=10))
        return seen

    compare("leader epochs", scenario, cluster)


def _epochs(partitions: list[TopicPartition]) -> list[tuple[int, int, int | None]]:
    return sorted((tp.partition, tp.offset, tp.leader_epoch) for tp in partitions)


def test_on_commit_reports(cluster: ReferenceCluster) -> None:
    """Asynchronous and automatic commits reach on_commit with their offsets (or the error);
    synchronous ones answer their caller only; automatic commits of unmoved positions are skipped."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("on-commit", 1, records=4), run.group("on-commit")
        reports: list[Any] = []

        def on_commit(error: Any, partitions: list[TopicPartition]) -> None:
            reports.append(
                (None if error is None else error.code(), [(tp.partition, tp.offset) for tp in partitions])
            )

        consumer = run.consumer(group, on_commit=on_commit)
        consumer.subscribe([topic])
        read(consumer, 4)
        consumer.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
        drain(consumer, 0.3)
        seen: dict[str, Any] = {"after sync": list(reports)}
        reports.clear()
        consumer.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=True)
        consumer.commit(offsets=[TopicPartition(topic, 0, -1001)], asynchronous=True)
        deadline = time.monotonic() + 10
        while len(reports) < 2 and time.monotonic() < deadline:
            consumer.poll(0.05)
        seen["after async"] = sorted(reports, key=repr)
        return seen

    compare("on_commit", scenario, cluster)


def test_store_offsets_api(cluster: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic = run.topic("store-api", 2, records=2)
        seen: dict[str, Any] = {}
        for auto_store in (True, False):
            consumer = run.consumer(run.group(f"store-api-{auto_store}"), enable_auto_offset_store=auto_store)
            consumer.subscribe([topic])
            (message,) = read(consumer, 1)
            calls = _store_calls(consumer, message, topic)
            for name, call in calls.items():
                seen[f"auto_store={auto_store} {name}"] = _code(call)
            consumer.close()
        return seen

    compare("store_offsets API", scenario, cluster)


def _store_calls(consumer: Any, message: Any, topic: str) -> dict[str, Callable[[], Any]]:
    p = message.partition()
    return {
        "message": lambda: consumer.store_offsets(message=message),
        "owned": lambda: consumer.store_offsets(offsets=[TopicPartition(topic, p, 1)]),
        "not owned": lambda: consumer.store_offsets(offsets=[TopicPartition(topic, 9, 1)]),
        "logical": lambda: consumer.store_offsets(offsets=[TopicPartition(topic, p, -1001)]),
        "no argument": lambda: consumer.store_offsets(),
        "both": lambda: consumer.store_offsets(message=message, offsets=[]),
    }


def test_poll_returns_on_time(cluster: ReferenceCluster) -> None:
    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("poll-timeout", 1), run.group("poll-timeout")
        consumer = run.consumer(group)
        consumer.subscribe([topic])
        drain(consumer, 1.0)  # joined and idle
        late = []
        for timeout in (0.2, 0.5, 1.0):
            # The best of three: a loaded machine may hold either process back once.
            attempts = []
            for _ in range(3):
                start = time.monotonic()
                assert consumer.poll(timeout) is None
                attempts.append(time.monotonic() - start - timeout)
            late.append(min(attempts))
        return {"never early": all(x > -0.005 for x in late), "within 20 ms": all(x < 0.02 for x in late)}

    compare("poll timeout", scenario, cluster)


def test_consume_with_fewer_records_than_asked(cluster: ReferenceCluster) -> None:
    """consume(100, 1.0) with 10 records there: both return the 10 records; confluent-kafka after
    the whole timeout, kconsumer as soon as they are there (an intended difference)."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("consume-few", 1, records=10), run.group("consume-few")
        consumer = run.consumer(group)
        consumer.subscribe([topic])
        got: list[Any] = []
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:  # joined, first records fetched
            got = [m for m in consumer.consume(1, 0.2) if m.error() is None]
        time.sleep(0.5)  # the other nine are fetched
        start = time.monotonic()
        rest = [m for m in consumer.consume(100, 1.0) if m.error() is None]
        elapsed = time.monotonic() - start
        return {
            "offsets": [m.offset() for m in got + rest],
            "returned before the timeout": elapsed < 0.5,
        }

    compare("consume fewer than asked", scenario, cluster)


def _ledger_member(
    run: Run,
    ledger: Ledger,
    name: str,
    group: str,
    topic: str,
    commit_in_revoke: bool = True,
    **settings: Any,
) -> Any:
    """A consumer reporting ownership to `ledger`; its on_revoke commits (no arguments) when
    `commit_in_revoke`."""
    cluster = run.cluster
    consumer = run.consumer(group, **settings)

    def assigned(_c: Any, partitions: list[TopicPartition]) -> None:
        ledger.assigned(name, [(tp.topic, tp.partition) for tp in partitions])

    def revoked(c: Any, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        if commit_in_revoke:
            with contextlib.suppress(KafkaException):  # nothing to commit
                c.commit(asynchronous=False)
        ledger.released(name, keys, "revoked", dict(cluster.committed(group)))

    def lost(_c: Any, partitions: list[TopicPartition]) -> None:
        ledger.released(name, [(tp.topic, tp.partition) for tp in partitions], "lost")

    consumer.subscribe([topic], on_assign=assigned, on_revoke=revoked, on_lost=lost)
    return consumer


def _poll_into(
    ledger: Ledger, name: str, consumer: Any, seconds: float, keep: list[Any] | None = None
) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        message = consumer.poll(0.02)
        if message is not None and message.error() is None:
            ledger.received(name, message)
            if keep is not None:
                keep.append(message)


def _hand_over(ledger: Ledger, first: Any, second: Any) -> list[Any]:
    """Poll both members until "second" owns partitions and a while longer; the records it got."""
    got: list[Any] = []
    deadline = time.monotonic() + 20
    while not ledger.owned_by("second") and time.monotonic() < deadline:
        _poll_into(ledger, "first", first, 0.05)
        _poll_into(ledger, "second", second, 0.05, got)
    for _ in range(10):
        _poll_into(ledger, "first", first, 0.05)
        _poll_into(ledger, "second", second, 0.05, got)
    return got


def test_commit_without_arguments_in_on_revoke_covers_the_revoked_partitions(
    cluster: ReferenceCluster,
) -> None:
    """The at-least-once idiom: process, and commit() inside on_revoke. The next owner reads
    nothing again (confluent-kafka: 0 records)."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("revoke-commit", 2, records=10), run.group("revoke-commit")
        ledger = Ledger(cluster_committed(run.cluster, group))
        ledger.sample_group(run.cluster, group)
        first = _ledger_member(run, ledger, "first", group, topic)
        _poll_into(ledger, "first", first, 0.1)
        deadline = time.monotonic() + 20
        while ledger.count() < 20 and time.monotonic() < deadline:
            _poll_into(ledger, "first", first, 0.1)
        second = _ledger_member(run, ledger, "second", group, topic)
        reread = _hand_over(ledger, first, second)
        moved = sorted(ledger.owned_by("second"))
        produced = {(topic, p): list(range(10)) for p in range(2)}
        ledger.check(produced)
        return {
            "partitions moved": len(moved),
            "records read again by the new owner": [(m.partition(), m.offset()) for m in reread],
            "committed": sorted(run.cluster.committed(group).values()),
        }

    compare("commit in on_revoke", scenario, cluster)


def test_store_offsets_after_processing_keeps_at_least_once(cluster: ReferenceCluster) -> None:
    """enable.auto.offset.store=false, auto-commit on: offsets are stored only once a record is
    processed; a partition that moves is picked up right after the last processed record, and
    every record is processed once (nothing processed and committed is read again)."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("stored", 2, records=10), run.group("stored")
        ledger = Ledger(cluster_committed(run.cluster, group))
        settings = {
            "enable_auto_offset_store": False,
            "enable_auto_commit": True,
            "auto_commit_interval_ms": 200,
        }
        first = _ledger_member(run, ledger, "first", group, topic, commit_in_revoke=False, **settings)
        received: list[Any] = []
        deadline = time.monotonic() + 20
        while len(received) < 20 and time.monotonic() < deadline:
            _poll_into(ledger, "first", first, 0.1, received)
        # A worker thread processes the records; the polling thread stores the offsets of the
        # ones it finished (the rest is still in flight when the partitions move).
        with concurrent.futures.ThreadPoolExecutor(1) as worker:
            finished = [worker.submit(lambda m=m: m) for m in received if m.offset() < 6]
            processed = [future.result() for future in finished]
        for message in processed:
            first.store_offsets(message=message)
        _poll_into(ledger, "first", first, 0.5)  # an auto-commit happens
        second = _ledger_member(run, ledger, "second", group, topic, commit_in_revoke=False, **settings)
        by_second = _hand_over(ledger, first, second)
        ledger.check({(topic, p): list(range(10)) for p in range(2)})
        processed_keys = {position(m) for m in processed}
        return {
            "processed records read again": sorted(
                k for k in map(position, by_second) if k in processed_keys
            ),
            "first offset the new owner read": sorted(
                {m.offset() for m in by_second} and {min(m.offset() for m in by_second)}
            ),
        }

    compare("store_offsets at-least-once", scenario, cluster)


def test_commits_of_nothing_new_and_of_older_offsets(cluster: ReferenceCluster) -> None:
    """librdkafka commits a partition's position (or stored offset) only when it is ahead of what
    it last committed: a second commit() with nothing new is _NO_OFFSET, and so is one after
    storing an older offset, which leaves the group's offset where it was."""

    def scenario(run: Run) -> dict[str, Any]:
        topic, group = run.topic("nothing-new", 1, records=6), run.group("nothing-new")
        reports: list[Any] = []

        def on_commit(error: Any, partitions: list[TopicPartition]) -> None:
            reports.append(
                (None if error is None else error.code(), [(tp.partition, tp.offset) for tp in partitions])
            )

        consumer = run.consumer(group, enable_auto_offset_store=False, on_commit=on_commit)
        consumer.subscribe([topic])
        messages = read(consumer, 6)
        consumer.store_offsets(message=messages[-1])
        seen: dict[str, Any] = {"first commit": _code(lambda: consumer.commit(asynchronous=False))}
        seen["again"] = _code(lambda: consumer.commit(asynchronous=False))
        consumer.store_offsets(offsets=[TopicPartition(topic, 0, 2)])
        seen["after storing an older offset"] = _code(lambda: consumer.commit(asynchronous=False))
        seen["committed"] = sorted(cluster.committed(group).values())
        reports.clear()
        consumer.commit(asynchronous=True)
        deadline = time.monotonic() + 3
        while not reports and time.monotonic() < deadline:
            consumer.poll(0.05)
        seen["async commit of nothing new"] = reports[:1]
        return seen

    compare("commits of nothing new", scenario, cluster)


def test_commit_in_on_revoke_during_close_and_a_mixed_async_commit(cluster: ReferenceCluster) -> None:
    """commit() inside on_revoke while close() revokes everything commits only what moved since
    the last commit (nothing: _NO_OFFSET); an asynchronous commit naming an owned partition and a
    partition of another topic reports to on_commit with both."""

    def scenario(run: Run) -> dict[str, Any]:
        topic = run.topic("close-commit", 1, records=4)
        other = run.topic("close-commit-other", 1)
        outcomes: list[Any] = []

        def on_revoke(c: Any, partitions: list[TopicPartition]) -> None:
            if partitions:
                outcomes.append(_code(lambda: c.commit(asynchronous=False))[:2])

        closing = run.consumer(run.group("close-commit"))
        closing.subscribe([topic], on_revoke=on_revoke)
        read(closing, 4)
        closing.commit(asynchronous=False)
        closing.close()
        seen: dict[str, Any] = {"commit in on_revoke during close": outcomes}

        reports: list[Any] = []

        def on_commit(error: Any, partitions: list[TopicPartition]) -> None:
            listed = sorted((tp.topic == topic, tp.partition, tp.offset) for tp in partitions)
            reports.append((None if error is None else "error", listed))

        mixed = run.consumer(run.group("mixed-commit"), on_commit=on_commit)
        mixed.subscribe([topic])
        read(mixed, 4)
        mixed.commit(offsets=[TopicPartition(topic, 0, 2), TopicPartition(other, 0, 1)], asynchronous=True)
        deadline = time.monotonic() + 5
        while not reports and time.monotonic() < deadline:
            mixed.poll(0.05)
        seen["mixed async commit: partitions reported"] = [listed for _error, listed in reports[:1]]
        return seen

    compare("close and mixed commits", scenario, cluster)


def test_a_seek_keeps_the_stored_offset(cluster: ReferenceCluster) -> None:
    """A seek moves the fetch position, not the stored offset: librdkafka's seek resets only the
    application position (`rd_kafka_toppar_seek`), and a stored offset changes only when one is
    stored again. So a commit right after seeking back commits what was stored before, and one
    after reading from the new position commits that."""

    def scenario(run: Run) -> dict[str, Any]:
        topic = run.topic("seek-stored", 1, records=6)
        seen: dict[str, Any] = {}
        for auto_store in (True, False):
            group = run.group(f"seek-stored-{auto_store}")
            consumer = run.consumer(group, enable_auto_offset_store=auto_store, enable_auto_commit=False)
            consumer.subscribe([topic])
            messages = read(consumer, 4)
            if not auto_store:
                consumer.store_offsets(message=messages[-1])
            consumer.seek(TopicPartition(topic, 0, 1))
            (at,) = consumer.position([TopicPartition(topic, 0)])
            seen[f"auto_store={auto_store} position after seek"] = at.offset
            seen[f"auto_store={auto_store} commit after seek"] = _code(_sync_commit(consumer))
            seen[f"auto_store={auto_store} committed after seek"] = _committed(consumer, topic)
            (again,) = read(consumer, 1)
            seen[f"auto_store={auto_store} read after seek"] = again.offset()
            if not auto_store:
                consumer.store_offsets(message=again)
            seen[f"auto_store={auto_store} commit after reading"] = _code(_sync_commit(consumer))
            seen[f"auto_store={auto_store} committed after reading"] = _committed(consumer, topic)
            consumer.close()
        return seen

    compare("seek keeps the stored offset", scenario, cluster)


def _sync_commit(consumer: Any) -> Callable[[], Any]:
    return lambda: consumer.commit(asynchronous=False)


def _committed(consumer: Any, topic: str) -> int:
    (tp,) = consumer.committed([TopicPartition(topic, 0)], timeout=10)
    return int(tp.offset)
