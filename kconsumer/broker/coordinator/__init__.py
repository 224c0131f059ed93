"""The reference group coordinator: the server side of KIP-848 as a deterministic, sans-IO core."""

from __future__ import annotations

from ...assignment.interface import TopicMetadata
from .config import CoordinatorConfig
from .coordinator import GroupCoordinator, Result
from .metadata import MetadataImage

__all__ = ["CoordinatorConfig", "GroupCoordinator", "MetadataImage", "Result", "TopicMetadata"]
