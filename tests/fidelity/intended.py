"""Where the reference cluster answers differently from Apache Kafka 4.4 on purpose: one entry per
(scenario, observation label), with the reason. Everything else must be equal; an entry that no
longer differs fails the suite too (it would hide a future regression).
"""

from __future__ import annotations

INTENDED: dict[tuple[str, str], str] = {
    ("regex_changed_to_one_matching_nothing", "after A's regex matches nothing"): (
        "A member that switches to a regex matching nothing while another member keeps the topic: "
        "Apache Kafka 4.4 bumps no epoch when that regex resolves to nothing, so the member's "
        "target keeps the partition it gave up and nobody owns it until some other change bumps "
        "the epoch (a liveness gap: those records wait). The reference coordinator bumps the epoch "
        "when a regex resolving to nothing leaves a member with a target, and the partition moves "
        "to the other member. Found by the simulation (seed 8796028)."
    ),
    ("metadata_by_name", "every topic"): (
        "Apache Kafka lists its internal __consumer_offsets topic (is_internal=true) once a group "
        "has used it; the reference cluster keeps group state in its own record log, not in a topic, "
        "so it has no internal topic to list. Clients skip internal topics in subscriptions."
    ),
    ("api_versions_ranges", "ranges of the APIs both serve"): (
        "Produce: Apache Kafka advertises versions 0-2 but refuses them (KAFKA-18659); the reference "
        "cluster advertises 3-13, what it accepts. ApiVersions v5 and DeleteGroups v3 (Kafka 4.4) are "
        "not implemented by kconsumer's codec yet: a client negotiates the lower common version. "
        "Transactions: AddPartitionsToTxn 0-3 (v4+ are broker-to-broker), and EndTxn, TxnOffsetCommit "
        "and InitProducerId without the versions of transactions v2 (KIP-890 part 2, which the "
        "reference cluster does not advertise): clients use transactions v1 on it. ListTransactions "
        "0-1 (Kafka 4.4 adds v2, a transactional id pattern)."
    ),
}
