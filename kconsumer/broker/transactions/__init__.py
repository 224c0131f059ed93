"""The reference cluster's transaction coordinator (sans-IO): transactional ids, their producers'
epochs, and the transactions whose markers the broker writes."""

from .coordinator import MAX_TRANSACTION_TIMEOUT_MS, Outcome, TransactionCoordinator
from .model import TransactionMetadata, TransactionRecord, TxnState, WriteMarkers

__all__ = [
    "MAX_TRANSACTION_TIMEOUT_MS",
    "Outcome",
    "TransactionCoordinator",
    "TransactionMetadata",
    "TransactionRecord",
    "TxnState",
    "WriteMarkers",
]
