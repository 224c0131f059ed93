"""Built-in client-side assignors: ``range`` and ``uniform``, the coordinator's algorithms run by
a member (`kconsumer.PartitionAssignor` adapters of `kconsumer.broker.coordinator.assignors`).

They assign exactly as the server-side assignors of the same names would, which makes them a
starting point (subclass and override `assign` to post-process) and a way to try client-side
assignment with a known result::

    from kconsumer.assignors import UniformAssignor

    consumer = Consumer({..., "group.local.assignors": [UniformAssignor()]})
    # or, as a string: "group.local.assignors": "kconsumer.assignors:UniformAssignor"
"""

from __future__ import annotations

from ._adapter import ServerAlgorithmAssignor, to_group_spec
from .builtin import RangeAssignor, UniformAssignor

__all__ = ["RangeAssignor", "ServerAlgorithmAssignor", "UniformAssignor", "to_group_spec"]
