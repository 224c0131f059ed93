"""Classic groups (JoinGroup / SyncGroup / Heartbeat / LeaveGroup / DescribeGroups) in the
reference coordinator; docs/classic-protocol.md describes the rules and the design."""
