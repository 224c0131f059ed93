"""Worker groups (group type ``connect``): kconsumer's implementation of the new group protocol
for connectors and tasks (docs/worker-protocol.md)."""
