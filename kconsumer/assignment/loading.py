"""Loading an assignor named by a ``"package.module:Attribute"`` string.

Both sides accept such strings: the consumer in ``group.local.assignors`` (a `PartitionAssignor`)
and the coordinator in ``group.consumer.assignors`` (a `ServerAssignor`). `load_object` imports
the module, follows the attribute path (dots allowed: ``"module:Holder.instance"``) and creates an
instance when the attribute is a class. Each side turns a `LoadError` into its own error.
"""

from __future__ import annotations

import importlib


class LoadError(Exception):
    """The target cannot be loaded. Subclasses say at which step; the message is the reason."""


class NotATargetError(LoadError):
    """The text is not of the form ``"module:Attribute"``."""


class TargetImportError(LoadError):
    """The module cannot be imported or has no such attribute (the cause is chained)."""


class TargetCreateError(LoadError):
    """The class named cannot be instantiated without arguments (the cause is chained)."""


def load_object(target: str) -> object:
    """The object ``"package.module:Attribute"`` names; a class is instantiated without arguments.

    >>> load_object("collections:OrderedDict")
    OrderedDict()
    """
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise NotATargetError(f"{target!r} is not of the form 'module:Class'")
    try:
        obj: object = importlib.import_module(module_name)
        for part in attribute.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise TargetImportError(str(exc)) from exc
    if not isinstance(obj, type):
        return obj
    try:
        return obj()
    except Exception as exc:
        raise TargetCreateError(str(exc)) from exc
