"""The client: the `Consumer` facade (application thread), its fetch path, the asyncio runtime
(`runtime`) and the sans-IO member session (`member`). Nothing here imports the broker."""
