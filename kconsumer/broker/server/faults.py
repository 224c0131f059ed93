"""Fault injection: what the next requests of an API get instead of a normal answer.

Three kinds, each keyed by API key and consumed request by request (in arrival order across all
connections):

* **error**: the request is *not* processed and is answered with an error code, placed where the
  API puts errors (`error_responses`).
* **delay**: the request is processed at once, its response leaves `delay_ms` later (a slow
  coordinator or network; later requests on the same connection wait behind it, as in Kafka).
* **drop**: the request is processed, then the connection is closed instead of answering (a lost
  response: the client cannot know whether its request took effect).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

#: `count` value meaning "every request from now on, until cleared".
FOREVER = -1


@dataclass
class _Delay:
    delay_ms: int
    remaining: int


class Faults:
    """The pending faults of one broker."""

    def __init__(self) -> None:
        self._errors: dict[int, deque[tuple[int, str | None]]] = {}
        self._delays: dict[int, _Delay] = {}
        self._drops: dict[int, int] = {}

    def __bool__(self) -> bool:
        return bool(self._errors or self._delays or self._drops)

    def inject_error(self, api_key: int, error_code: int, count: int = 1, message: str | None = None) -> None:
        """Answer the next `count` requests of `api_key` with `error_code` (queued after earlier ones)."""
        if count <= 0:
            raise ValueError("count must be positive")
        self._errors.setdefault(api_key, deque()).extend([(error_code, message)] * count)

    def delay_responses(self, api_key: int, delay_ms: int, count: int = FOREVER) -> None:
        """Hold the responses to the next `count` requests of `api_key` (FOREVER: until cleared)."""
        if delay_ms < 0:
            raise ValueError("delay_ms must not be negative")
        if count == 0 or count < FOREVER:
            raise ValueError("count must be positive or FOREVER")
        self._delays[api_key] = _Delay(delay_ms, count)

    def drop_responses(self, api_key: int, count: int = 1) -> None:
        """Process the next `count` requests of `api_key` but close the connection instead of answering."""
        if count <= 0:
            raise ValueError("count must be positive")
        self._drops[api_key] = self._drops.get(api_key, 0) + count

    def clear(self, api_key: int | None = None) -> None:
        """Forget the pending faults of one API, or of all."""
        for table in (self._errors, self._delays, self._drops):
            if api_key is None:
                table.clear()
            else:
                table.pop(api_key, None)

    # -- consumed by the broker, one request at a time --------------------------------------

    def take_error(self, api_key: int) -> tuple[int, str | None] | None:
        queue = self._errors.get(api_key)
        if not queue:
            return None
        fault = queue.popleft()
        if not queue:
            del self._errors[api_key]
        return fault

    def take_delay_ms(self, api_key: int) -> int:
        delay = self._delays.get(api_key)
        if delay is None:
            return 0
        if delay.remaining != FOREVER:
            delay.remaining -= 1
            if delay.remaining == 0:
                del self._delays[api_key]
        return delay.delay_ms

    def take_drop(self, api_key: int) -> bool:
        left = self._drops.get(api_key, 0)
        if left <= 0:
            return False
        if left == 1:
            del self._drops[api_key]
        else:
            self._drops[api_key] = left - 1
        return True
