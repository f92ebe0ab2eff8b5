"""The table's name for the errors' root and its input family: `TablectlError` and `InputError`
are defined in `shared/errors.py` (the room both the table's devices and head office import;
`devices/` never imports `controller`) and are the same classes here."""

from shared.errors import InputError, TablectlError

__all__ = ["InputError", "TablectlError"]
