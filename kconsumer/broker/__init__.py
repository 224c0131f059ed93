"""The reference broker: the sans-IO group coordinator (`coordinator`) and the asyncio Kafka
server around it (`server`). The client never imports this package."""
