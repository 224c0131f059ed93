"""The coordinator's server-side assignors: a registry over the shared algorithms
(`kconsumer.assignment.algorithms`: ``uniform`` and ``range``) and custom ones.

``group.consumer.assignors`` (`CoordinatorConfig.assignors`) lists assignors, the first being the
default. An entry is the name of a registered assignor (``uniform``, ``range`` or one
added with `register_assignor`), or ``"package.module:Class"``: an importable class implementing
`ServerAssignor` (built with no arguments) or an importable assignor instance. Members ask for an
assignor by its ``name``; `resolve_assignors` turns the configured entries into instances.
`kconsumer.assignment.validation.validate_result` checks any assignor's result against the
`ServerAssignor.assign` contract (useful for custom ones).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import cast

from ...assignment.algorithms import RangeServerAssignor, UniformServerAssignor
from ...assignment.interface import ServerAssignor
from ...assignment.loading import LoadError, NotATargetError, load_object

__all__ = [
    "ASSIGNORS",
    "DEFAULT_ASSIGNORS",
    "UnknownAssignorError",
    "assignor_by_name",
    "load_assignor",
    "register_assignor",
    "resolve_assignors",
    "unregister_assignor",
]

#: Kafka's default ``group.consumer.assignors``: the first entry is the default assignor.
DEFAULT_ASSIGNORS: tuple[str, ...] = ("uniform", "range")

_BUILT_IN: dict[str, ServerAssignor] = {"uniform": UniformServerAssignor(), "range": RangeServerAssignor()}
_registry: dict[str, ServerAssignor] = dict(_BUILT_IN)
_loaded: dict[str, ServerAssignor] = {}

#: Every registered assignor by name: the built-ins and those added with `register_assignor`
#: (a read-only live view).
ASSIGNORS: Mapping[str, ServerAssignor] = MappingProxyType(_registry)


class UnknownAssignorError(LookupError):
    """No registered assignor has this name, or a ``module:Class`` entry cannot be loaded."""


def register_assignor(assignor: ServerAssignor, *, replace: bool = False) -> ServerAssignor:
    """Make `assignor` available under its ``name`` and return it.

    Registering a second assignor under a taken name needs ``replace=True``; the built-in
    ``uniform`` and ``range`` cannot be replaced.
    """
    name = _check_assignor(assignor, repr(assignor))
    if name in _BUILT_IN and _registry.get(name) is not assignor:
        raise ValueError(f"the built-in assignor {name!r} cannot be replaced")
    if name in _registry and _registry[name] is not assignor and not replace:
        raise ValueError(f"an assignor named {name!r} is already registered")
    _registry[name] = assignor
    return assignor


def unregister_assignor(name: str) -> None:
    """Remove a custom assignor (the built-ins stay). Unknown names are ignored."""
    if name in _BUILT_IN:
        raise ValueError(f"the built-in assignor {name!r} cannot be removed")
    _registry.pop(name, None)


def load_assignor(target: str) -> ServerAssignor:
    """Import ``"package.module:Attribute"``: a class (instantiated without arguments) or an instance.

    The result is cached per `target`, so loading twice gives the same object. It is not
    registered; `resolve_assignors` does not need it to be.
    """
    cached = _loaded.get(target)
    if cached is not None:
        return cached
    try:
        assignor = load_object(target)
    except NotATargetError:
        raise UnknownAssignorError(f"not an assignor name or 'module:Class' path: {target!r}") from None
    except LoadError as exc:
        raise UnknownAssignorError(f"cannot load the assignor {target!r}: {exc}") from exc.__cause__
    _check_assignor(assignor, target)
    _loaded[target] = cast(ServerAssignor, assignor)
    return _loaded[target]


def assignor_by_name(name: str) -> ServerAssignor:
    """The registered assignor called `name`, or the one a ``"module:Class"`` path names."""
    assignor = _registry.get(name)
    if assignor is not None:
        return assignor
    if ":" in name:
        return load_assignor(name)
    known = ", ".join(sorted(_registry))
    raise UnknownAssignorError(f"unknown server-side assignor {name!r} (known: {known})")


def resolve_assignors(entries: Iterable[str | ServerAssignor]) -> tuple[ServerAssignor, ...]:
    """The assignors a ``group.consumer.assignors`` list names, in order (the first is the default).

    Entries are names, ``"module:Class"`` paths or assignor instances. Two entries with the
    same ``name`` and an empty list are errors (`ValueError`); unknown names raise
    `UnknownAssignorError`.
    """
    resolved: list[ServerAssignor] = []
    seen: set[str] = set()
    for entry in entries:
        if isinstance(entry, str):
            assignor = assignor_by_name(entry)
        else:
            _check_assignor(entry, repr(entry))
            assignor = entry
        if assignor.name in seen:
            raise ValueError(f"the assignor {assignor.name!r} is listed twice")
        seen.add(assignor.name)
        resolved.append(assignor)
    if not resolved:
        raise ValueError("at least one server-side assignor is needed")
    return tuple(resolved)


def _check_assignor(assignor: object, what: str) -> str:
    name = getattr(assignor, "name", None)
    if not isinstance(name, str) or not name or not callable(getattr(assignor, "assign", None)):
        raise TypeError(f"{what} is not a server-side assignor (needs a non-empty `name` and `assign`)")
    return name
