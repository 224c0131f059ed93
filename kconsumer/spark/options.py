"""The source's options (``spark.readStream.format("kconsumer").option(...)``), parsed once.

Spark passes options as strings, with case-insensitive names. The source's own options:

=========================  =========  ===========================================================
option                     default    meaning
=========================  =========  ===========================================================
kafka.bootstrap.servers    required   brokers; every ``kafka.<key>`` goes to the clients, prefix
                                      removed (kconsumer keys to the driver's group member,
                                      librdkafka keys to every client)
group.id                   required   the consumer group the query joins (streaming); for a batch
                                      read, the group whose committed offsets
                                      ``startingOffsets=committed`` reads (``kafka.group.id`` too)
subscribe                             comma-separated topic names
subscribePattern                      an RE2 regular expression (full-name match, resolved by the
                                      broker for a streaming query)
assign                                JSON ``{"topic": [0, 1]}``: explicit partitions (batch reads)
startingOffsets            latest     streaming: where a partition with no committed offset in the
                           (earliest  group starts (``earliest``, ``latest`` or JSON
                           for batch) ``{"t": {"0": 12, "1": -2}}``, -2 earliest, -1 latest).
                                      Batch: also ``committed`` (the group's committed offsets)
endingOffsets              latest     batch only: ``latest`` or JSON like startingOffsets
maxRecordsPerTrigger       none       admission control: at most this many records per
                                      micro-batch (alias ``maxOffsetsPerTrigger``)
failOnDataLoss             true       a range starting before the log start offset (deleted by
                                      retention) fails the task; false skips to the earliest offset
readTimeoutMs              120000     longest time an executor task may take to read its offset
                                      ranges
taskSlots                  see        a batch with more ranges than this is read by about this
                           meaning    many tasks, each reading several ranges with one handle
                                      (never over about a million records a task, unless one range
                                      is larger); default: the session's default parallelism when
                                      ``register()`` ran; 0: one task per range
joinTimeoutMs              30000      longest wait for the group's first assignment (AvailableNow)
=========================  =========  ===========================================================
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Key = tuple[str, int]

#: Spark's logical offsets in JSON offset specs.
EARLIEST = -2
LATEST = -1

#: Keys kconsumer's Consumer knows but a plain librdkafka consumer must not get (or would ignore
#: with a warning); the executors' and the driver's admin clients drop them.
KCONSUMER_ONLY_KEYS = frozenset(
    {
        "group.id",
        "group.protocol",
        "group.instance.id",
        "group.remote.assignor",
        "group.local.assignors",
        "enable.auto.commit",
        "auto.commit.interval.ms",
        "auto.offset.reset",
        "max.poll.interval.ms",
        "on_commit",
        "request.timeout.ms",
        "retry.backoff.max.ms",
    }
)

#: The driver's admin client's first wait before reconnecting, unless the settings choose one.
#: librdkafka also spaces its "connect to any broker" attempts by half of it, and a new handle's
#: first request waited that out: with librdkafka's 100 ms, one metadata request of a batch
#: read's planning took 54-62 ms (median of 20) on the reference cluster and Apache Kafka 4.4;
#: with 10 ms, 14-17 ms. Reconnections after failures still back off exponentially up to
#: ``reconnect.backoff.max.ms``.
ADMIN_RECONNECT_BACKOFF_MS = 10

#: Consumer-only librdkafka keys an AdminClient would warn about.
_CONSUMER_KEY_PREFIXES = ("fetch.", "queued.", "enable.", "check.crcs", "isolation.level", "max.partition")

OffsetSpec = Literal["earliest", "latest", "committed"] | dict[Key, int]


class SourceOptionError(ValueError):
    """An option of the ``kconsumer`` source is missing, unknown or malformed."""

    def __init__(self, option: str, reason: str) -> None:
        self.option = option
        super().__init__(f"kconsumer source option {option!r}: {reason}")


@dataclass(frozen=True)
class SourceOptions:
    """Validated source options (see the module docstring)."""

    #: Every ``kafka.*`` option with the prefix removed (never includes group.id).
    kafka: Mapping[str, str]
    group_id: str | None = None
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    assign: Mapping[str, tuple[int, ...]] | None = None
    starting: OffsetSpec = "latest"
    starting_given: bool = False
    ending: OffsetSpec = "latest"
    max_records_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    read_timeout_ms: int = 120_000
    join_timeout_ms: int = 30_000
    #: Spark's task slots the batch's ranges are packed for (`offsets.pack`); None: not packed.
    task_slots: int | None = None

    @property
    def bootstrap_servers(self) -> str:
        """``kafka.bootstrap.servers``."""
        return self.kafka["bootstrap.servers"]

    def member_config(self) -> dict[str, Any]:
        """The driver's kconsumer `Consumer` config: the group member (it never fetches)."""
        config: dict[str, Any] = dict(self.kafka)
        config["group.id"] = self.group_id
        config["enable.auto.commit"] = False
        config.setdefault("client.id", "kconsumer-spark")
        # The membership consumer never resets a position itself (it fetches nothing); the
        # source resolves partitions without a committed offset with startingOffsets.
        config["auto.offset.reset"] = "earliest"
        return config

    def client_config(self) -> dict[str, Any]:
        """librdkafka settings shared by the executors' readers and the driver's admin client."""
        return {k: v for k, v in self.kafka.items() if k not in KCONSUMER_ONLY_KEYS}

    def admin_config(self) -> dict[str, Any]:
        """The driver's AdminClient settings (metadata, watermarks)."""
        shared = self.client_config().items()
        config: dict[str, Any] = {"reconnect.backoff.ms": ADMIN_RECONNECT_BACKOFF_MS}
        config.update((k, v) for k, v in shared if not k.startswith(_CONSUMER_KEY_PREFIXES))
        return config

    def describe_subscription(self) -> str:
        """The subscription in words, for error messages."""
        if self.pattern is not None:
            return f"pattern {self.pattern!r}"
        if self.assign is not None:
            return f"partitions {dict(self.assign)}"
        return f"topics {list(self.topics)}"


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def parse_offset_spec(option: str, text: str, *, allow_committed: bool) -> OffsetSpec:
    """``earliest``, ``latest``, (batch) ``committed``, or Spark's Kafka JSON
    ``{"topic": {"0": 23, "1": -2}}`` (-2: earliest, -1: latest)."""
    word = text.strip().lower()
    if word in ("earliest", "latest") or (allow_committed and word == "committed"):
        return word  # type: ignore[return-value]
    try:
        raw = json.loads(text)
    except ValueError:
        words = "earliest, latest, committed" if allow_committed else "earliest, latest"
        raise SourceOptionError(option, f"expected {words} or JSON offsets, got {text!r}") from None
    if not isinstance(raw, dict):
        raise SourceOptionError(option, 'JSON offsets are an object {"topic": {"partition": offset}}')
    spec: dict[Key, int] = {}
    for topic, partitions in raw.items():
        if not isinstance(partitions, dict):
            raise SourceOptionError(option, f"offsets of topic {topic!r} must be an object")
        for partition, offset in partitions.items():
            try:
                number = int(partition)
            except ValueError:
                raise SourceOptionError(option, f"bad partition {partition!r} of {topic!r}") from None
            if not isinstance(offset, int) or isinstance(offset, bool) or offset < EARLIEST:
                raise SourceOptionError(option, f"bad offset {offset!r} for {topic}-{partition}")
            spec[(topic, number)] = offset
    return spec


def _positive_int(option: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise SourceOptionError(option, f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise SourceOptionError(option, f"expected a positive integer, got {value}")
    return value


def _count(option: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise SourceOptionError(option, f"expected a whole number, 0 or more, got {text!r}") from None
    if value < 0:
        raise SourceOptionError(option, f"expected a whole number, 0 or more, got {value}")
    return value


def _bool(option: str, text: str) -> bool:
    word = text.strip().lower()
    if word in ("true", "1", "yes"):
        return True
    if word in ("false", "0", "no"):
        return False
    raise SourceOptionError(option, f"expected true or false, got {text!r}")


def _assign(text: str) -> dict[str, tuple[int, ...]]:
    try:
        raw = json.loads(text)
    except ValueError:
        raw = None
    if not isinstance(raw, dict) or not all(
        isinstance(v, list) and all(isinstance(p, int) and not isinstance(p, bool) for p in v)
        for v in raw.values()
    ):
        raise SourceOptionError("assign", f'expected JSON {{"topic": [0, 1]}}, got {text!r}')
    return {str(topic): tuple(sorted(set(parts))) for topic, parts in raw.items()}


_KNOWN = frozenset(
    {
        "group.id",
        "subscribe",
        "subscribepattern",
        "assign",
        "startingoffsets",
        "endingoffsets",
        "maxrecordspertrigger",
        "maxoffsetspertrigger",
        "failondataloss",
        "readtimeoutms",
        "jointimeoutms",
        "taskslots",
        # Spark adds these itself.
        "path",
        "paths",
    }
)


def parse_options(
    options: Mapping[str, str], *, streaming: bool, task_slots: int | None = None
) -> SourceOptions:
    """Validate the options of a streaming (`streaming=True`) or batch read; `task_slots` is the
    ``taskSlots`` default (the session's, from `register()`)."""
    opts = _lower(options)
    kafka = {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
    unknown = sorted(k for k in opts if not k.startswith("kafka.") and k not in _KNOWN)
    if unknown:
        raise SourceOptionError(unknown[0], "unknown option (Kafka client settings take the kafka. prefix)")
    if not kafka.get("bootstrap.servers"):
        raise SourceOptionError("kafka.bootstrap.servers", "required")
    group_id = opts.get("group.id") or kafka.get("group.id")
    kafka.pop("group.id", None)
    if streaming and not group_id:
        raise SourceOptionError("group.id", "required: a streaming query is a member of this consumer group")

    chosen = [k for k in ("subscribe", "subscribepattern", "assign") if opts.get(k)]
    if len(chosen) != 1:
        raise SourceOptionError("subscribe", "give exactly one of subscribe, subscribePattern, assign")
    topics: tuple[str, ...] = ()
    pattern = None
    assign = None
    if chosen[0] == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in opts["subscribe"].split(",") if t.strip()))
        if not topics:
            raise SourceOptionError("subscribe", "no topic name given")
    elif chosen[0] == "subscribepattern":
        from ..client.subscription import SubscriptionPattern

        pattern = SubscriptionPattern(opts["subscribepattern"]).pattern
    else:
        if streaming:
            raise SourceOptionError(
                "assign",
                "streaming queries subscribe (the group assigns partitions); assign is for batch reads",
            )
        assign = _assign(opts["assign"])

    starting_given = "startingoffsets" in opts
    default_start = "latest" if streaming else "earliest"
    starting = parse_offset_spec(
        "startingOffsets", opts.get("startingoffsets", default_start), allow_committed=not streaming
    )
    if starting == "committed" and not group_id:
        raise SourceOptionError("startingOffsets", "committed needs group.id (the group to read offsets of)")
    ending: OffsetSpec = "latest"
    if "endingoffsets" in opts:
        if streaming:
            raise SourceOptionError("endingOffsets", "only for batch reads")
        ending = parse_offset_spec("endingOffsets", opts["endingoffsets"], allow_committed=False)
        if ending == "earliest":
            raise SourceOptionError("endingOffsets", "earliest is not a valid end")
    limit_text = opts.get("maxrecordspertrigger") or opts.get("maxoffsetspertrigger")
    limit = None if limit_text is None else _positive_int("maxRecordsPerTrigger", limit_text)
    return SourceOptions(
        kafka=kafka,
        group_id=group_id,
        topics=topics,
        pattern=pattern,
        assign=assign,
        starting=starting,
        starting_given=starting_given,
        ending=ending,
        max_records_per_trigger=limit,
        fail_on_data_loss=_bool("failOnDataLoss", opts.get("failondataloss", "true")),
        read_timeout_ms=_positive_int("readTimeoutMs", opts.get("readtimeoutms", "120000")),
        join_timeout_ms=_positive_int("joinTimeoutMs", opts.get("jointimeoutms", "30000")),
        task_slots=_count("taskSlots", opts["taskslots"]) if "taskslots" in opts else task_slots,
    )
