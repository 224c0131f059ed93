"""Where ``kconsumer groups reset-offsets`` moves a group's offsets (pure), with the rules of
Kafka's ``kafka-consumer-groups.sh --reset-offsets``:

- the scope is ``--topic T`` (every partition), ``--topic T:0,2`` or ``--all-topics`` (every
  partition the group has a committed offset for);
- ``--to-earliest`` / ``--to-latest`` / ``--to-datetime`` take the log's offsets;
  ``--to-offset N`` and ``--shift-by N`` are clamped into [log start, log end];
  ``--shift-by`` needs a committed offset to shift;
- only a group without members can be reset (the coordinator refuses admin commits otherwise).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

from .views import Key

#: Group states in which offsets may be reset (Kafka: the group must be inactive).
RESETTABLE_STATES = frozenset({"empty", "dead"})


class ResetError(ValueError):
    """The reset cannot be planned (the message says why)."""


@dataclass(frozen=True)
class ResetSpec:
    """One of the reset modes: `kind` is earliest, latest, offset, shift or datetime."""

    kind: str
    value: int = 0

    @classmethod
    def datetime(cls, text: str) -> ResetSpec:
        """``--to-datetime``: an ISO 8601 time (UTC when it has no offset) as epoch ms."""
        try:
            moment = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ResetError(f"--to-datetime {text!r}: expected ISO 8601, e.g. 2026-11-25T10:00:00") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.timezone.utc)
        return cls("datetime", int(moment.timestamp() * 1000))


def parse_scope(values: list[str]) -> dict[str, list[int] | None]:
    """``--topic`` values: topic -> its partitions (None: all of them)."""
    scope: dict[str, list[int] | None] = {}
    for value in values:
        topic, sep, partitions = value.partition(":")
        if not topic:
            raise ResetError(f"--topic {value!r}: expected TOPIC or TOPIC:P,P")
        if not sep:
            scope[topic] = None
            continue
        try:
            scope[topic] = sorted({int(p) for p in partitions.split(",") if p.strip()})
        except ValueError:
            raise ResetError(f"--topic {value!r}: partitions are integers") from None
    return scope


def plan(
    spec: ResetSpec,
    partitions: list[Key],
    committed: Mapping[Key, int],
    log_start: Mapping[Key, int],
    log_end: Mapping[Key, int],
    at_time: Mapping[Key, int] | None = None,
) -> dict[Key, int]:
    """The new offset of every partition in `partitions`."""
    planned: dict[Key, int] = {}
    for key in partitions:
        low, high = log_start[key], log_end[key]
        if spec.kind == "earliest":
            target = low
        elif spec.kind == "latest":
            target = high
        elif spec.kind == "datetime":
            assert at_time is not None
            target = at_time[key]
        elif spec.kind == "offset":
            target = spec.value
        elif spec.kind == "shift":
            if key not in committed:
                raise ResetError(f"cannot shift {key[0]}-{key[1]}: the group has no committed offset there")
            target = committed[key] + spec.value
        else:
            raise ResetError(f"unknown reset mode {spec.kind!r}")
        planned[key] = min(max(target, low), high)
    return planned
