"""One background thread running an asyncio loop, and thread-safe ways to hand it work."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger("kconsumer.client.runtime")

T = TypeVar("T")


class BackgroundLoop:
    """A daemon thread with its own event loop. `submit` runs a coroutine there and returns a
    concurrent future; `call` runs a plain function there. `stop` ends the loop and joins."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.call_soon(self._ready.set)
        try:
            self._loop.run_forever()
        finally:
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.close()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._loop.is_closed()

    def in_loop_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coroutine` on the loop; the result (or exception) arrives through the future."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def call(self, function: Callable[..., Any], *args: Any) -> None:
        """Run `function(*args)` on the loop thread, soon. Exceptions are logged, never lost."""

        def guarded() -> None:
            try:
                function(*args)
            except Exception:
                log.exception("background callback %r failed", function)

        self._loop.call_soon_threadsafe(guarded)

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop (cancelling what runs on it) and wait for the thread to end."""
        if self._thread.is_alive() and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._loop.stop)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
