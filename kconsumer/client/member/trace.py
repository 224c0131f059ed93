"""The member's trace: at DEBUG, the ``kconsumer.trace`` logger gets one line per event the
member's core handles, with the effects it asked for and the session's clock (milliseconds):
a rebalance seen request by request (docs/operations.md, "Tracing a member")."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

trace = logging.getLogger("kconsumer.trace")


def trace_step(now_ms: int, event: object, effects: Sequence[object]) -> None:
    """Trace one event and its effects (callers check ``trace.isEnabledFor(DEBUG)`` first)."""
    trace.debug("%d event %s -> %s", now_ms, describe(event), [describe(e) for e in effects])


def describe(item: object) -> str:
    """A trace line's short form of an event or effect: its type, its scalar fields, a nested
    request's or response's epoch and error code, and the sizes of its collections."""
    parts: list[str] = []
    for field in dataclasses.fields(item) if dataclasses.is_dataclass(item) else ():
        value = getattr(item, field.name)
        if value is None or isinstance(value, (bool, int, str)):
            parts.append(f"{field.name}={value}")
        elif isinstance(value, (tuple, list, set, frozenset, dict)):
            parts.append(f"{field.name}#{len(value)}")
        else:
            for name in ("member_epoch", "error_code"):
                if isinstance(getattr(value, name, None), int):
                    parts.append(f"{name}={getattr(value, name)}")
            for name in ("assignment", "topic_partitions"):
                held = getattr(value, name, None)
                held = getattr(held, "topic_partitions", held)
                if isinstance(held, list):
                    parts.append(f"{name}={sum(len(getattr(t, 'partitions', ())) for t in held)}")
    return f"{type(item).__name__}({', '.join(parts)})"
