"""Assignors in the configuration: ``group.local.assignors`` (consumer protocol) and
``partition.assignment.strategy`` (classic protocol).

Both take `PartitionAssignor` instances or ``"module:Class"`` strings (loaded with
`kconsumer.assignment.loading`); ``partition.assignment.strategy`` also takes the built-in
strategy names ``range``, ``roundrobin`` and ``cooperative-sticky``, as a comma-separated string
(confluent-kafka's form) or a list mixing names and assignors. Every problem is a `ConfigError`
naming the key.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..assignment.assignor import assignor_metadata
from ..assignment.classic_strategies import CLASSIC_STRATEGIES, is_cooperative
from ..assignment.loading import NotATargetError, TargetCreateError, TargetImportError, load_object
from ..assignment.versions import VersionRange
from ..errors import ConfigError

LOCAL_ASSIGNORS_KEY = "group.local.assignors"
STRATEGY_KEY = "partition.assignment.strategy"

#: ``rebalance_protocol`` values of a user assignor (classic protocol).
REBALANCE_PROTOCOLS = ("eager", "cooperative")


@runtime_checkable
class LocalAssignor(Protocol):
    """What configuration needs from a client-side assignor: a name and a version range, and
    optionally ``metadata()`` (the member's initial metadata). `kconsumer.PartitionAssignor` is
    the full interface; the `Consumer` also requires its ``assign(spec)``."""

    name: str
    minimum_version: int
    maximum_version: int


@dataclass(frozen=True)
class ClassicStrategies:
    """``partition.assignment.strategy`` read: every strategy's name in preference order, the
    application's own assignors among them, and whether they are cooperative (KIP-429)."""

    names: tuple[str, ...]
    user_assignors: tuple[LocalAssignor, ...]
    cooperative: bool


def _items(key: str, value: Any) -> list[Any]:
    if isinstance(value, str):
        items = [item.strip() for item in value.split(",") if item.strip()]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise ConfigError(key, "must be a list of assignors or of 'module:Class' strings")
    return items


def _unique(key: str, names: Iterable[str]) -> None:
    names = list(names)
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(key, f"assignor names must be unique, {', '.join(duplicates)} repeats")


def local_assignors(value: Any) -> tuple[LocalAssignor, ...]:
    """``group.local.assignors`` read."""
    assignors = [assignor_from(LOCAL_ASSIGNORS_KEY, item) for item in _items(LOCAL_ASSIGNORS_KEY, value)]
    _unique(LOCAL_ASSIGNORS_KEY, (a.name for a in assignors))
    return tuple(assignors)


def classic_strategies(value: Any) -> ClassicStrategies:
    """``partition.assignment.strategy`` read: built-in names (any case) and assignors."""
    key = STRATEGY_KEY
    names: list[str] = []
    users: list[LocalAssignor] = []
    kinds: set[bool] = set()
    items = _items(key, value)
    if not items:
        raise ConfigError(key, "must name at least one strategy")
    for item in items:
        if isinstance(item, str) and item.strip().lower() in CLASSIC_STRATEGIES:
            name = item.strip().lower()
            kinds.add(is_cooperative(name))
        elif isinstance(item, str) and ":" not in item:
            raise ConfigError(
                key,
                f"unknown strategy {item!r}: use range, roundrobin, cooperative-sticky, a "
                "PartitionAssignor or a 'module:Class' string",
            )
        else:
            assignor = assignor_from(key, item)
            protocol = getattr(assignor, "rebalance_protocol", "eager")
            if protocol not in REBALANCE_PROTOCOLS:
                raise ConfigError(
                    key, f"assignor {assignor.name!r}: rebalance_protocol must be 'eager' or 'cooperative'"
                )
            if assignor.name in CLASSIC_STRATEGIES:
                raise ConfigError(key, f"assignor {assignor.name!r} takes the name of a built-in strategy")
            name = assignor.name
            users.append(assignor)
            kinds.add(protocol == "cooperative")
        names.append(name)
    _unique(key, names)
    if len(kinds) > 1:
        raise ConfigError(
            key,
            "mixes eager (range, roundrobin) and cooperative (cooperative-sticky) strategies: a "
            "member uses one rebalance protocol, choose one kind",
        )
    return ClassicStrategies(tuple(names), tuple(users), kinds == {True})


def assignor_from(key: str, item: Any) -> LocalAssignor:
    """An assignor object, or one loaded from a ``"module:Class"`` string, checked: a name, a
    valid version range and valid ``metadata()``."""
    if isinstance(item, str):
        try:
            item = load_object(item)
        except NotATargetError as exc:
            raise ConfigError(key, str(exc)) from None
        except TargetImportError as exc:
            raise ConfigError(key, f"cannot import {item!r}: {exc}") from None
        except TargetCreateError as exc:
            raise ConfigError(key, f"cannot create {item!r} without arguments: {exc}") from None
    missing = [a for a in ("name", "minimum_version", "maximum_version") if getattr(item, a, None) is None]
    if missing:
        raise ConfigError(key, f"{item!r} is not an assignor: it has no {', '.join(missing)}")
    name, low, high = item.name, item.minimum_version, item.maximum_version
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(key, f"{item!r}: name must be a non-empty string")
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (low, high)):
        raise ConfigError(key, f"assignor {name!r}: minimum_version and maximum_version must be integers")
    problem = VersionRange(low, high).problem()
    if problem is not None:
        raise ConfigError(key, f"assignor {name!r}: {problem}")
    try:
        assignor_metadata(item)
    except (TypeError, ValueError) as exc:
        raise ConfigError(key, f"assignor {name!r}: metadata(): {exc}") from None
    assignor: LocalAssignor = item
    return assignor
