"""The reference cluster's broker: an asyncio TCP server speaking the Kafka protocol on loopback.

One node, in memory: topics and record batches (`log`), Produce/Fetch/ListOffsets/Metadata/admin
APIs, and the group and offset APIs answered by the sans-IO `kconsumer.broker.coordinator`. Run it with
``kconsumer serve`` or, in-process, through `kconsumer.testing.ReferenceCluster`.
"""

from __future__ import annotations

from .broker import Broker
from .config import ServerConfig
from .server import ReferenceServer

__all__ = ["Broker", "ReferenceServer", "ServerConfig"]
