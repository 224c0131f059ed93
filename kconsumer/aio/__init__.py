"""kconsumer for asyncio: ``from kconsumer.aio import AIOConsumer`` (see `consumer`)."""

from .consumer import AIOConsumer

__all__ = ["AIOConsumer"]
