"""The durable ledger (headoffice/ledger/core.py says how it works). Callers import from here."""

from headoffice.ledger.batch import _Batch
from headoffice.ledger.common import (
    LAST_ALARMS,
    LAST_HITS,
    BatchResult,
    Incoming,
    LedgerError,
    force_bool,
    utc_now,
)
from headoffice.ledger.core import Ledger
from headoffice.ledger.params import ParamChange

__all__ = ["LAST_ALARMS", "LAST_HITS", "BatchResult", "Incoming", "Ledger", "LedgerError",
           "ParamChange", "_Batch", "force_bool", "utc_now"]
