"""Test and tooling helpers: the blocking wire client (`wire`), and the in-process reference
cluster and simulation harness."""
