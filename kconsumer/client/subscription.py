"""`SubscriptionPattern`: a regex subscription resolved by the broker (KIP-848, heartbeat v1)."""

from __future__ import annotations

from collections.abc import Sequence

from ..patterns import InvalidPatternError, compile_pattern


class SubscriptionPattern:
    """A regular expression in RE2 syntax, matched by the group coordinator against full topic
    names (Kafka's ``SubscriptionPattern``). Topics created later that match join the
    subscription without any client action.

    The pattern is validated with google-re2 when it is created: a syntax error raises
    `InvalidPatternError` (a `ValueError`) at once, before anything is sent.
    """

    __slots__ = ("_pattern",)

    def __init__(self, pattern: str) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise InvalidPatternError(str(pattern), "a subscription pattern is a non-empty string")
        compile_pattern(pattern)
        self._pattern = pattern

    @property
    def pattern(self) -> str:
        """The regular expression, as sent to the coordinator."""
        return self._pattern

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SubscriptionPattern) and other._pattern == self._pattern

    def __hash__(self) -> int:
        return hash(self._pattern)

    def __repr__(self) -> str:
        return f"SubscriptionPattern({self._pattern!r})"


def parse_subscription(topics: Sequence[str] | SubscriptionPattern) -> tuple[tuple[str, ...], str | None]:
    """(names, pattern) of a subscribe() argument."""
    if isinstance(topics, SubscriptionPattern):
        return (), topics.pattern
    if isinstance(topics, str):
        raise TypeError("subscribe() takes a list of topic names (or a SubscriptionPattern), not a string")
    names = list(topics)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ValueError("subscribe() needs a non-empty list of non-empty topic names")
    regexes = [n for n in names if n.startswith("^")]
    if regexes and len(regexes) != len(names):
        raise ValueError(
            "cannot mix topic names and regular expressions ('^...') in one subscription: the "
            "consumer group protocol carries one or the other"
        )
    if regexes:
        pattern = regexes[0] if len(regexes) == 1 else "|".join(f"(?:{r})" for r in regexes)
        return (), SubscriptionPattern(pattern).pattern
    return tuple(dict.fromkeys(names)), None
