"""The built-in assignment algorithms, by topic id (`kconsumer.assignment.interface`).

``uniform`` (`UniformServerAssignor`: balanced, then sticky) and ``range`` (`RangeServerAssignor`:
co-partitioned ranges). The coordinator runs them as its server-side assignors; a member runs them
through the client-side `kconsumer.assignors.UniformAssignor` and `kconsumer.assignors.RangeAssignor`.

Every algorithm here is pure and deterministic: the result depends only on the `GroupSpec`. The
modules are tuned for large groups (see each module's performance notes).
"""

from __future__ import annotations

from .range_assignor import RangeServerAssignor
from .uniform import UniformServerAssignor
from .uniform_heterogeneous import MAX_ITERATION_COUNT

__all__ = ["MAX_ITERATION_COUNT", "RangeServerAssignor", "UniformServerAssignor"]
