"""RE2 topic patterns, shared by the client (validating a `SubscriptionPattern` before it is sent;
resolving it itself with ``group.protocol=classic``) and the reference coordinator (resolving it
against topic names).

Kafka resolves subscription regexes on the broker with RE2/J and a *full-name* match; google-re2
implements the same syntax, so a pattern accepted here is accepted by a real broker.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # errors are raised with their reason, not printed by the C++ library


class InvalidPatternError(ValueError):
    """The pattern is not valid RE2 syntax. `reason` is RE2's explanation."""

    def __init__(self, pattern: str, reason: str) -> None:
        self.pattern = pattern
        self.reason = reason
        super().__init__(f"invalid RE2 regular expression {pattern!r}: {reason}")


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:
    """The compiled pattern, or InvalidPatternError."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "syntax error"
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise InvalidPatternError(pattern, str(reason)) from None
    except (TypeError, ValueError) as exc:
        raise InvalidPatternError(pattern, str(exc)) from None


def matching_topics(pattern: str, topic_names: Iterable[str]) -> frozenset[str]:
    """The names fully matched by `pattern` (Kafka's ``matcher(name).matches()``)."""
    compiled = compile_pattern(pattern)
    return frozenset(name for name in topic_names if compiled.fullmatch(name) is not None)


def searched_topics(pattern: str, topic_names: Iterable[str]) -> frozenset[str]:
    """The names `pattern` matches somewhere (a ``^`` anchors it at the start), internal topics
    (``__...``) left out: how librdkafka's classic consumer matches a ``^...`` subscription
    against the cluster's topics."""
    compiled = compile_pattern(pattern)
    return frozenset(n for n in topic_names if not n.startswith("__") and compiled.search(n) is not None)
