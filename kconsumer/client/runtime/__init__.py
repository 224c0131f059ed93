"""The consumer's background runtime: one thread running an asyncio loop that talks to the
cluster and drives the sans-IO member core with the real clock."""
