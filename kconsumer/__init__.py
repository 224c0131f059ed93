"""kconsumer: a Kafka consumer for the KIP-848 consumer group protocol."""

from __future__ import annotations

__version__ = "0.1.0"
