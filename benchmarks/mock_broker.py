"""librdkafka's mock cluster as a standalone process, with topics of any partition count.

``confluent_kafka.Producer({'test.mock.num.brokers': 1})`` starts the same mock cluster, but
topics then only auto-create with 4 partitions and the KIP-848 session timeout and heartbeat
interval stay at the mock's defaults (30 s and 3 s). This module loads the very librdkafka that
confluent-kafka bundles (``confluent_kafka.libs``) through ctypes, starts the mock cluster on a
producer handle (``test.mock.num.brokers=1``) and calls its C test API
(``rd_kafka_mock_topic_create``, ``rd_kafka_mock_set_group_consumer_session_timeout_ms``,
``rd_kafka_mock_set_group_consumer_heartbeat_interval_ms``,
``rd_kafka_mock_group_initial_rebalance_delay_ms``). confluent-kafka's Python module is not
imported here, so exactly one copy of librdkafka lives in this process.

It prints ``listening on HOST:PORT`` once ready and runs until SIGTERM/SIGINT or until its
standard input closes (so it never outlives the benchmark that started it)::

    python -m benchmarks.mock_broker --topic orders:8 --session-timeout-ms 6000
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import importlib.util
import os
import signal
import sys
import threading
from collections.abc import Sequence


def librdkafka_path() -> str:
    """The librdkafka shared library bundled with the installed confluent-kafka wheel."""
    spec = importlib.util.find_spec("confluent_kafka")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("confluent-kafka is not installed")
    package = next(iter(spec.submodule_search_locations))
    candidates = sorted(
        glob.glob(os.path.join(os.path.dirname(package), "confluent_kafka.libs", "librdkafka*.so*"))
    )
    if not candidates:
        raise RuntimeError("no bundled librdkafka found next to confluent_kafka (a source build?)")
    return candidates[0]


class MockCluster:
    """A librdkafka mock cluster with one broker, driven through librdkafka's C test API."""

    def __init__(self) -> None:
        lib = ctypes.CDLL(librdkafka_path())
        vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
        lib.rd_kafka_conf_new.restype = vp
        lib.rd_kafka_conf_set.argtypes = [vp, cp, cp, cp, ctypes.c_size_t]
        lib.rd_kafka_new.restype = vp
        lib.rd_kafka_new.argtypes = [i, vp, cp, ctypes.c_size_t]
        lib.rd_kafka_handle_mock_cluster.restype = vp
        lib.rd_kafka_handle_mock_cluster.argtypes = [vp]
        lib.rd_kafka_mock_cluster_bootstraps.restype = cp
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
        lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, i, i]
        lib.rd_kafka_mock_set_group_consumer_session_timeout_ms.argtypes = [vp, i]
        lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms.argtypes = [vp, i]
        lib.rd_kafka_mock_group_initial_rebalance_delay_ms.argtypes = [vp, ctypes.c_int32]
        lib.rd_kafka_version_str.restype = cp
        self._lib = lib
        conf = lib.rd_kafka_conf_new()
        error = ctypes.create_string_buffer(512)
        for key, value in ((b"test.mock.num.brokers", b"1"), (b"log_level", b"3")):
            if lib.rd_kafka_conf_set(conf, key, value, error, len(error)) != 0:
                raise RuntimeError(error.value.decode())
        self._handle = lib.rd_kafka_new(0, conf, error, len(error))  # RD_KAFKA_PRODUCER
        if not self._handle:
            raise RuntimeError(error.value.decode())
        self._cluster = lib.rd_kafka_handle_mock_cluster(self._handle)
        if not self._cluster:
            raise RuntimeError("librdkafka did not start a mock cluster")

    @property
    def version(self) -> str:
        return str(self._lib.rd_kafka_version_str().decode())

    @property
    def bootstrap_servers(self) -> str:
        return str(self._lib.rd_kafka_mock_cluster_bootstraps(self._cluster).decode())

    def create_topic(self, name: str, partitions: int) -> None:
        code = self._lib.rd_kafka_mock_topic_create(self._cluster, name.encode(), partitions, 1)
        if code != 0:
            raise RuntimeError(f"rd_kafka_mock_topic_create({name}, {partitions}) failed: error {code}")

    def set_group_consumer_timeouts(self, session_timeout_ms: int, heartbeat_interval_ms: int) -> None:
        """KIP-848 groups' session timeout and heartbeat interval (broker-side settings)."""
        self._lib.rd_kafka_mock_set_group_consumer_session_timeout_ms(self._cluster, session_timeout_ms)
        self._lib.rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(self._cluster, heartbeat_interval_ms)

    def set_initial_rebalance_delay_ms(self, delay_ms: int) -> None:
        """Classic groups' ``group.initial.rebalance.delay.ms`` (the mock's default is 3000)."""
        self._lib.rd_kafka_mock_group_initial_rebalance_delay_ms(self._cluster, delay_ms)


def _topic(text: str) -> tuple[str, int]:
    name, _, count = text.rpartition(":")
    return (name, int(count)) if name else (text, 1)


def main(argv: Sequence[str] | None = None) -> int:
    """Start the mock cluster, print its address, wait for SIGTERM or the end of stdin."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topic", dest="topics", action="append", type=_topic, default=[], metavar="NAME:N")
    parser.add_argument("--session-timeout-ms", type=int, default=None)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=None)
    parser.add_argument("--initial-rebalance-delay-ms", type=int, default=None)
    args = parser.parse_args(argv)
    cluster = MockCluster()
    for name, partitions in args.topics:
        cluster.create_topic(name, partitions)
    if args.session_timeout_ms is not None or args.heartbeat_interval_ms is not None:
        cluster.set_group_consumer_timeouts(
            args.session_timeout_ms or 30_000, args.heartbeat_interval_ms or 3_000
        )
    if args.initial_rebalance_delay_ms is not None:
        cluster.set_initial_rebalance_delay_ms(args.initial_rebalance_delay_ms)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    def watch_stdin() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    print(f"listening on {cluster.bootstrap_servers}", flush=True)
    stop.wait()
    os._exit(0)  # the mock's threads need no orderly shutdown


if __name__ == "__main__":
    raise SystemExit(main())
