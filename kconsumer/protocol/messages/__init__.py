"""Message definitions, one module per API family."""

from __future__ import annotations

from ..schema import Message
from . import (
    admin,
    api_versions,
    classic_group,
    consumer_group,
    extensions,
    fetch,
    list_groups,
    list_offsets,
    metadata,
    offsets,
    produce,
    producer_ids,
    sasl,
    transactions,
    worker_group,
)

_MODULES = (
    admin,
    api_versions,
    classic_group,
    consumer_group,
    extensions,
    fetch,
    list_groups,
    list_offsets,
    metadata,
    offsets,
    produce,
    producer_ids,
    sasl,
    transactions,
    worker_group,
)


def all_message_pairs() -> list[tuple[type[Message], type[Message]]]:
    """Every (request, response) class pair defined in this package."""
    requests: dict[int, type[Message]] = {}
    responses: dict[int, type[Message]] = {}
    for module in _MODULES:
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Message) and value.API_KEY >= 0:
                target = requests if value.__name__.endswith("Request") else responses
                target[value.API_KEY] = value
    return [(requests[key], responses[key]) for key in sorted(requests)]
