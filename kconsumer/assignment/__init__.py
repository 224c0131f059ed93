"""Partition assignment, shared by the client and the reference broker (sans-IO).

Neither side owns it: the consumer and the coordinator both import it, and it imports neither
(only `kconsumer.protocol` and `kconsumer.errors`).

=====================  ===========================================================================
module                 what it holds
=====================  ===========================================================================
`assignor`             the user-facing client-side assignor API, by topic name (`PartitionAssignor`,
                       `AssignmentSpec`, `GroupAssignment`, ...; exported by `kconsumer`)
`builtin`              the client-side `RangeAssignor` and `UniformAssignor` (`kconsumer.assignors`)
`interface`            the by-topic-id algorithm interface (`ServerAssignor`, `GroupSpec`,
                       `PartitionsByTopicId`, ...)
`algorithms`           the built-in algorithms: ``uniform`` (homogeneous and heterogeneous) and
                       ``range``
`validation`           the rules of a valid assignment, checked by one function
`versions`             metadata version ranges
`announcements`        what members announce about their client-side assignors, what they are told
                       back, and the selection of an assignor and of the member that computes
`loading`              ``"module:Class"`` strings
`conversions`          PrepareAssignment / InstallAssignment messages <-> the assignor's values
=====================  ===========================================================================

The wire contract of client-side assignment is docs/assignor-protocol.md.
"""
