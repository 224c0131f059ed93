"""A deterministic simulation of worker groups (docs/simulation.md, worker groups): the shipped
coordinator, worker core and assignors under crashes, partitions, lost answers, coordinator
failovers, joins, leaves and changes of the declared work, with the invariants of `checks`.

    python -m kconsumer.testing.worker_sim --seeds 0:500
"""

from __future__ import annotations

from .run import WorkerSimResult, run_seed

__all__ = ["WorkerSimResult", "run_seed"]
