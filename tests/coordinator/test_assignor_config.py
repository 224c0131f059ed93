"""Assignors configured as ``"module:Class"`` are known to members by their name."""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

from kconsumer.assignment.algorithms import UniformServerAssignor
from kconsumer.assignment.interface import GroupSpec, PartitionsByTopicId
from kconsumer.broker.coordinator import CoordinatorConfig, GroupCoordinator
from kconsumer.errors import ErrorCode
from kconsumer.protocol.messages.consumer_group import ConsumerGroupDescribeRequest


class Mine:
    """A custom assignor whose name differs from its import path."""

    name = "mine"

    def assign(self, spec: GroupSpec) -> dict[str, PartitionsByTopicId]:
        return UniformServerAssignor().assign(spec)


def test_a_module_class_assignor_is_selected_by_its_name(make_driver: Any, monkeypatch: Any) -> None:
    module = types.ModuleType("kconsumer_test_custom_assignor")
    module.Mine = Mine  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    d = make_driver(assignors=(f"{module.__name__}:Mine", "range"))
    assert d.coordinator.default_assignor == "mine"
    d.create_topic("foo", 2)
    response = d.join("A", server_assignor="mine")
    assert response.error_code == ErrorCode.NONE and d.assigned("A") == {"foo": [0, 1]}
    request = ConsumerGroupDescribeRequest(group_ids=["g"])
    described = d.coordinator.describe(request, 1, d.now).response.groups[0]
    assert described.assignor_name == "mine"


def test_explicit_assignors_must_cover_the_configured_names() -> None:
    with pytest.raises(ValueError, match="missing"):
        GroupCoordinator(
            CoordinatorConfig(assignors=("uniform", "missing")),
            assignors={"uniform": UniformServerAssignor()},
        )
