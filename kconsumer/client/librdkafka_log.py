"""librdkafka's log through Python `logging`, de-duplicated and rate-limited.

Without a ``logger`` setting, librdkafka writes every log line to stderr itself: a broker that is
down or refuses the credentials produces a line per connection attempt (hundreds in a few
seconds). kconsumer's fetch handle gives librdkafka the ``kconsumer.librdkafka`` logger instead,
so the application's logging configuration decides where the lines go and at which level, and a
filter keeps them readable:

* a message repeating one already let through in the last `WINDOW_S` seconds is dropped (numbers
  are ignored when comparing: ports, milliseconds and counters change from one attempt to the
  next);
* at most `MAX_PER_WINDOW` messages pass per window; the first one after a window that dropped
  some says how many were dropped.

An application that passes its own ``logger`` (as with confluent-kafka) gets librdkafka's lines
unfiltered on it.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable

LOGGER_NAME = "kconsumer.librdkafka"
WINDOW_S = 10.0
MAX_PER_WINDOW = 20
#: Distinct messages remembered at most (the oldest are forgotten first).
_REMEMBERED = 512
_NUMBERS = re.compile(r"\d+")


class RepeatFilter(logging.Filter):
    """Drops repeats and bursts of log records (see the module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self._lock = threading.Lock()
        self._last_seen: dict[str, float] = {}
        self._window_start = -WINDOW_S
        self._passed = 0
        self._dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        now = self._clock()
        shape = _NUMBERS.sub("#", record.getMessage())
        with self._lock:
            if now - self._window_start >= WINDOW_S:
                dropped, self._dropped = self._dropped, 0
                self._window_start, self._passed = now, 0
                if dropped:
                    record.msg = f"{record.getMessage()} ({dropped} similar librdkafka messages dropped)"
                    record.args = None
            last = self._last_seen.get(shape)
            if (last is not None and now - last < WINDOW_S) or self._passed >= MAX_PER_WINDOW:
                self._dropped += 1
                return False
            self._last_seen.pop(shape, None)
            self._last_seen[shape] = now
            if len(self._last_seen) > _REMEMBERED:
                del self._last_seen[next(iter(self._last_seen))]
            self._passed += 1
            return True


_logger: logging.Logger | None = None
_logger_lock = threading.Lock()


def librdkafka_logger() -> logging.Logger:
    """The ``kconsumer.librdkafka`` logger, with its `RepeatFilter` (one per process)."""
    global _logger
    with _logger_lock:
        if _logger is None:
            _logger = logging.getLogger(LOGGER_NAME)
            _logger.addFilter(RepeatFilter())
        return _logger
