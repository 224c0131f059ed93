"""The registry of wire-level scenarios and the comparison of two servers' observations.

A scenario is a function of a `Script`; `@scenario(...)` registers it with the cluster options it
needs. `compare` holds the reference cluster's observations to Apache Kafka's, label by label,
accepting only the differences `intended.INTENDED` lists with a reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from intended import INTENDED
from script import Script

Observations = list[tuple[str, Any]]


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[Script], None]
    #: `ReferenceCluster` options both servers are started with (beyond the fast timers).
    options: dict[str, Any] = field(default_factory=dict)


SCENARIOS: list[Scenario] = []


def scenario(**options: Any) -> Callable[[Callable[[Script], None]], Callable[[Script], None]]:
    """Register the decorated function as a scenario run on clusters started with `options`."""

    def register(run: Callable[[Script], None]) -> Callable[[Script], None]:
        SCENARIOS.append(Scenario(run.__name__, run, dict(options)))
        return run

    return register


def differences(name: str, kafka: Observations, reference: Observations) -> tuple[list[str], set[str]]:
    """The unexplained differences (text), and the intended ones that occurred (labels)."""
    problems: list[str] = []
    used: set[str] = set()
    kafka_steps, reference_steps = [label for label, _ in kafka], [label for label, _ in reference]
    if kafka_steps != reference_steps:
        problems.append(f"different steps: Kafka {kafka_steps}, reference {reference_steps}")
        return problems, used
    for (label, expected), (_, actual) in zip(kafka, reference, strict=True):
        if expected == actual:
            continue
        if (name, label) in INTENDED:
            used.add(label)
            continue
        problems.append(f"{label}:\n    Apache Kafka: {expected!r}\n    reference:    {actual!r}")
    return problems, used
