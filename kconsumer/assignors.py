"""Built-in client-side assignors: ``range`` and ``uniform``, the coordinator's own algorithms run by
a member (defined in `kconsumer.assignment.builtin`; also exported by `kconsumer`).

They assign exactly as the server-side assignors of the same names would, which makes them a
starting point (subclass and override `assign` to post-process) and a way to try client-side
assignment with a known result::

    from kconsumer.assignors import UniformAssignor

    consumer = Consumer({..., "group.local.assignors": [UniformAssignor()]})
    # or, as a string: "group.local.assignors": "kconsumer.assignors:UniformAssignor"

`ServerAlgorithmAssignor` runs any server-side assignment algorithm (a
`kconsumer.assignment.interface.ServerAssignor`, by topic id) as a client-side assignor.
"""

from __future__ import annotations

from .assignment.builtin import RangeAssignor, ServerAlgorithmAssignor, UniformAssignor, to_group_spec

__all__ = ["RangeAssignor", "ServerAlgorithmAssignor", "UniformAssignor", "to_group_spec"]
